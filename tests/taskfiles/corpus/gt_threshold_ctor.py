import torch
import torch.nn as nn


class Model(nn.Module):
    """A bool result (fp16 inputs): |a| within a constructor tolerance and b above a."""

    def __init__(self, tol):
        super().__init__()
        self.tol = tol

    def forward(self, a, b):
        return torch.logical_and(a.abs() <= self.tol, b > a)


def get_inputs():
    return [torch.randn(509, 257, dtype=torch.float16), torch.randn(509, 257, dtype=torch.float16)]


def get_init_inputs():
    return [0.75]
