"""A learned per-row scale applied to a bf16 matrix and summed over its rows: a vector times a
matrix written as a broadcast product and a sum over dim 0, the scale an nn.Parameter."""

import torch
from torch import nn


class RowScaledSum(nn.Module):
    def __init__(self, rows: int = 3000):
        super().__init__()
        self.scale = nn.Parameter(torch.linspace(-1.5, 2.0, rows).to(torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.scale[:, None] * x).sum(dim=0)


Model = RowScaledSum


def get_inputs():
    return [torch.randn(3000, 700).to(torch.bfloat16)]


def get_init_inputs():
    return [3000]
