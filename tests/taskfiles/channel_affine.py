import torch
import torch.nn as nn


class Model(nn.Module):
    """Per-channel affine on NCHW: x * scale.view(1, C, 1, 1) + bias.view(1, C, 1, 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        c = x.shape[1]
        return x * scale.view(1, c, 1, 1) + bias.view(1, c, 1, 1)


def get_inputs():
    return [torch.randn(16, 64, 112, 112), torch.randn(64), torch.randn(64)]


def get_init_inputs():
    return []
