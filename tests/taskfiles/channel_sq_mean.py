import torch
import torch.nn as nn


class Model(nn.Module):
    """Per-channel mean of squares over N, H, W of an NCHW tensor (a [C] output)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x * x, dim=(0, 2, 3))


def get_inputs():
    return [torch.randn(32, 48, 64, 64)]


def get_init_inputs():
    return []
