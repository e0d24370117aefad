import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear (fp32, freshly initialised weights) followed by GELU."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)

    def forward(self, x) -> torch.Tensor:
        return torch.nn.functional.gelu(self.fc(x))


def get_inputs():
    return [torch.randn(256, 384)]


def get_init_inputs():
    return [384, 512]
