import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Named like the registry's leaky_relu, but a functional PReLU over [N, C] with a slope
    per column drawn from a constructor-given range (a per-column operand, C prime)."""

    def __init__(self, features, lo, hi):
        super().__init__()
        self.slope = nn.Parameter(torch.linspace(lo, hi, features))

    def forward(self, x):
        return F.prelu(x, self.slope)


def get_inputs():
    return [torch.randn(1021, 127)]


def get_init_inputs():
    return [127, -0.5, 0.75]
