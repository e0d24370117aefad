import torch
import torch.nn as nn


class Model(nn.Module):
    """A [A, 1, B] weight broadcast along the middle axis of [A, K, B]."""

    def __init__(self):
        super().__init__()

    def forward(self, x, m) -> torch.Tensor:
        return x * m - m


def get_inputs():
    return [torch.randn(16, 100, 300), torch.rand(16, 1, 300)]


def get_init_inputs():
    return []
