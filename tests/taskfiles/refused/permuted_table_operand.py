import torch
import torch.nn as nn


class Model(nn.Module):
    """channels-last affine on NCHW data with a [H, W, C] table: the table would need a transpose."""

    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(16, 16, 32))

    def forward(self, x):
        return (x.permute(0, 2, 3, 1) * self.table).permute(0, 3, 1, 2)


def get_inputs():
    return [torch.randn(4, 32, 16, 16)]


def get_init_inputs():
    return []
