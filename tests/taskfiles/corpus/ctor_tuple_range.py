import torch
import torch.nn as nn


class Model(nn.Module):
    """A (low, high) tuple constructor argument used as clamp bounds."""

    def __init__(self, bounds=(-0.5, 0.75)):
        super().__init__()
        self.bounds = tuple(bounds)

    def forward(self, x):
        return torch.clamp(x, *self.bounds)


def get_inputs():
    return [torch.randn(2048, 512)]


def get_init_inputs():
    return [(-0.25, 0.5)]
