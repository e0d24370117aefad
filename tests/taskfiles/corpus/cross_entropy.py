import torch
import torch.nn as nn


class Model(nn.Module):
    """Called cross_entropy, computes mean squared error."""

    def __init__(self):
        super().__init__()

    def forward(self, p, t):
        return torch.mean((p - t) ** 2)


def get_inputs():
    return [torch.randn(256, 1000), torch.randn(256, 1000)]


def get_init_inputs():
    return []
