import torch
import torch.nn as nn


class Model(nn.Module):
    """Called gelu, computes the tanh approximation times 2."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return 2 * nn.functional.gelu(x, approximate='tanh')


def get_inputs():
    return [torch.randn(2000, 3000)]


def get_init_inputs():
    return []
