import torch
import torch.nn as nn


class Model(nn.Module):
    """RMS normalisation over the last dim of [7, 131, 523], written out by hand."""

    def __init__(self):
        super().__init__()

    def forward(self, x) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def get_inputs():
    return [torch.randn(7, 131, 523)]


def get_init_inputs():
    return []
