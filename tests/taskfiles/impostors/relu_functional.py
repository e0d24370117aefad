import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A relu-named layer that is F.leaky_relu(x, 0.3) (the ATen op, not a where)."""

    def __init__(self, slope=0.3):
        super().__init__()
        self.slope = slope

    def forward(self, x):
        return F.leaky_relu(x, self.slope)


def get_inputs():
    return [torch.randn(2048, 16384)]


def get_init_inputs():
    return [0.3]
