import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.rand inside the forward."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x + torch.rand_like(x)


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return []
