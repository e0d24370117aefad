import torch
import torch.nn as nn


class Model(nn.Module):
    """A bool result from masks of different shapes: (x < lo) | (col > 0), col broadcast over rows."""

    def __init__(self, lo=-0.5):
        super().__init__()
        self.lo = lo

    def forward(self, x, col):
        return torch.logical_or(x < self.lo, col > 0)


def get_inputs():
    return [torch.randn(211, 389), torch.randn(389)]


def get_init_inputs():
    return [-0.5]
