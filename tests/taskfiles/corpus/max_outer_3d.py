import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise max of [A, 1, C] and [1, B, C]: an outer-style broadcast, no input has the result's shape."""

    def __init__(self):
        super().__init__()

    def forward(self, p, q) -> torch.Tensor:
        return torch.maximum(p, q)


def get_inputs():
    return [torch.randn(64, 1, 256), torch.randn(1, 48, 256)]


def get_init_inputs():
    return []
