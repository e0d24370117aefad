import torch
import torch.nn as nn


class Model(nn.Module):
    """Named like the registry's cumsum, but only the int64 indices of a running max of an
    fp16 input over the last dim (prime width)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cummax(x, -1)[1]


def get_inputs():
    return [torch.randn(29, 2053, dtype=torch.float16)]


def get_init_inputs():
    return []
