import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.GroupNorm without affine parameters (per-group statistics of channel groups)."""

    def __init__(self, num_groups: int = 4, num_channels: int = 32):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups, num_channels, eps=1e-5, affine=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


def get_inputs():
    return [torch.randn(16, 32, 128, 128)]


def get_init_inputs():
    return [4, 32]
