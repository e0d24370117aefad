import torch
import torch.nn as nn


class Model(nn.Module):
    """A per-channel scale, then a sum over the height: a slabs loop over [N*C, H, W], where a
    [C] operand is neither a reduced-shape [N*C, W] tile nor a full one."""

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return (x * scale.view(1, -1, 1, 1)).sum(dim=2)


def get_inputs():
    return [torch.randn(16, 64, 56, 56), torch.randn(64)]


def get_init_inputs():
    return []
