import torch
import torch.nn as nn


class Model(nn.Module):
    """A complex input."""

    def __init__(self):
        super().__init__()

    def forward(self, z):
        return z * z


def get_inputs():
    return [torch.randn(64, 128, dtype=torch.complex64)]


def get_init_inputs():
    return []
