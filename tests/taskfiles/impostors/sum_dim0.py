import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over the leading dim of a 3-D tensor, keepdim; the axis arrives through *args."""

    def __init__(self, *settings):
        super().__init__()
        (self.axis,) = settings

    def forward(self, x):
        return x.sum(self.axis, keepdim=True)


def get_inputs():
    return [torch.randn(96, 512, 1000)]


def get_init_inputs():
    return [0]
