import torch
import torch.nn as nn


class Model(nn.Module):
    """fp16 x minus a [1, 1] fp16 tensor offset broadcast over a 3-D input."""

    def __init__(self):
        super().__init__()

    def forward(self, x, offset):
        return x - offset


def get_inputs():
    return [torch.randn(6, 211, 53, dtype=torch.float16), torch.randn(1, 1, dtype=torch.float16)]


def get_init_inputs():
    return []
