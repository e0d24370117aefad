import torch
import torch.nn as nn


class Model(nn.Module):
    """A [B, H, 1] column broadcast along the last axis."""

    def __init__(self):
        super().__init__()

    def forward(self, x, c):
        return torch.maximum(x, c)


def get_inputs():
    return [torch.randn(16, 64, 128), torch.randn(16, 64, 1)]


def get_init_inputs():
    return []
