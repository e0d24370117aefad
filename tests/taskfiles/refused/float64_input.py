import torch
import torch.nn as nn


class Model(nn.Module):
    """A float64 input (no DSL type)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(64, 128, dtype=torch.float64)]


def get_init_inputs():
    return []
