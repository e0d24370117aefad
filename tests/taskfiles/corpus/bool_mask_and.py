import torch
import torch.nn as nn


class Model(nn.Module):
    """A bool result: logical_and of a row mask and a column mask broadcast against each other."""

    def __init__(self):
        super().__init__()

    def forward(self, x, rows_on) -> torch.Tensor:
        return torch.logical_and(x > 0, rows_on > 0.5)


def get_inputs():
    return [torch.randn(640, 480), torch.rand(640, 1)]


def get_init_inputs():
    return []
