"""Pairwise gate: min(a[i], b[j]) * sigmoid(a[i]) over an outer [I, J, D] grid, fp16, D odd.
Neither input has the output's shape; a's row repeats J times, b's rows cycle."""
import torch
from torch import nn


class PairGate(nn.Module):
    def __init__(self, i: int, j: int, *, d: int = 301):
        super().__init__()
        self.i, self.j, self.d = i, j, d

    def forward(self, a, b):
        a3 = a.view(self.i, 1, self.d)
        b3 = b.view(1, self.j, self.d)
        return torch.minimum(a3, b3) * torch.sigmoid(a3)


Model = PairGate


def get_inputs():
    return [torch.randn(37, 301).half(), torch.randn(29, 301).half()]


def get_init_inputs():
    return [37, 29]
