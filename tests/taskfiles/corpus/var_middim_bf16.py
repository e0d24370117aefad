import torch
import torch.nn as nn


class Model(nn.Module):
    """Variance over the middle axis, bf16."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.var(x, dim=1)


def get_inputs():
    return [torch.randn(64, 200, 256, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
