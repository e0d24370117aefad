import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over the middle dim of [B, K, L]."""

    def __init__(self):
        super().__init__()

    def forward(self, x) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(8, 333, 128)]


def get_init_inputs():
    return []
