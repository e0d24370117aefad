"""nn.GroupNorm(8, 64) with per-channel weight and bias (varying values, passed as inputs) on
NCHW fp32: the weight varies inside each group row (load_every, runs of H * W elements)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(4, 64, 30, 34) * 2 + 1]


def get_init_inputs():
    return [64, 8]
