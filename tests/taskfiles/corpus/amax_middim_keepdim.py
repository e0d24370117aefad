import torch
import torch.nn as nn


class Model(nn.Module):
    """Max over dim 1 with keepdim, then a difference."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x - x.amax(dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(16, 128, 384)]


def get_init_inputs():
    return []
