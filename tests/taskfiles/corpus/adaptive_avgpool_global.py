import torch
import torch.nn as nn


class Model(nn.Module):
    """Global average pooling as a classifier head writes it: nn.AdaptiveAvgPool2d((1, 1))."""

    def __init__(self):
        super().__init__()
        self.gap = nn.AdaptiveAvgPool2d((1, 1))

    def forward(self, x):
        return self.gap(x)


def get_inputs():
    return [torch.randn(8, 512, 7, 7)]


def get_init_inputs():
    return []
