import torch
import torch.nn as nn


class Model(nn.Module):
    """Add an integer Python input."""

    def __init__(self):
        super().__init__()

    def forward(self, x, k: int):
        return torch.relu(x + k)


def get_inputs():
    return [torch.randn(1024, 777), 3]


def get_init_inputs():
    return []
