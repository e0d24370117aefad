import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """2x2 max pooling with stride 2 (F.max_pool2d(x, 2, 2)), no padding."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(x, 2, 2)


def get_inputs():
    return [torch.randn(16, 64, 224, 224)]


def get_init_inputs():
    return []
