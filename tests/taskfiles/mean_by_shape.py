import torch
import torch.nn as nn


class Model(nn.Module):
    """Row mean written with the row width from x.shape (a shape-derived constant)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        centred = x - x.sum(dim=-1, keepdim=True) / x.shape[-1]
        return centred * centred


def get_inputs():
    return [torch.randn(4096, 8192)]


def get_init_inputs():
    return []
