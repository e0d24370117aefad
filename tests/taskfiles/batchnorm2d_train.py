import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.BatchNorm2d in training mode with fresh weights (batch statistics per channel)."""

    def __init__(self, num_features: int = 32):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


def get_inputs():
    return [torch.randn(16, 32, 128, 128)]


def get_init_inputs():
    return [32]
