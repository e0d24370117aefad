import torch
import torch.nn as nn


class Model(nn.Module):
    """A constructor that raises."""

    def __init__(self, n):
        super().__init__()
        if n > 2:
            raise RuntimeError('n too large')

    def forward(self, x):
        return x


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return [5]
