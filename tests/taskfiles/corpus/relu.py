import torch
import torch.nn as nn


class Model(nn.Module):
    """Called relu, computes a leaky ramp with slope 0.2."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.where(x > 0, x, 0.2 * x)


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return []
