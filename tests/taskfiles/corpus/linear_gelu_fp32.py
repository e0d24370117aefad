import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear then GELU, fp32 (weights from a fixed seed)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)

    def forward(self, x):
        return nn.functional.gelu(self.fc(x))


def get_inputs():
    return [torch.randn(128, 384)]


def get_init_inputs():
    return [384, 256]
