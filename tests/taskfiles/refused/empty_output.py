import torch
import torch.nn as nn


class Model(nn.Module):
    """A forward whose output is empty: an empty slice of its input."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x[:, :0] * 2


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return []
