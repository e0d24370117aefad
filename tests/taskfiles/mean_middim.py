import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean over dim 1 of a 3-D tensor (a strided, middle-axis reduction)."""

    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=self.dim)


def get_inputs():
    return [torch.randn(32, 2048, 1023)]


def get_init_inputs():
    return [1]
