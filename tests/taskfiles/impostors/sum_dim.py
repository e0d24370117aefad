import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over dim 2 (the last), keepdim - the registry's sum_dim reduces dim 1."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(64, 1024, 1023)]


def get_init_inputs():
    return [2]
