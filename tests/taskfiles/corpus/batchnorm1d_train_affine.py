import torch
import torch.nn as nn


class Model(nn.Module):
    """BatchNorm1d in training mode over (N, C) with drawn affine parameters."""

    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)
        nn.init.uniform_(self.bn.weight, 0.5, 1.5)
        nn.init.uniform_(self.bn.bias, -0.2, 0.2)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(512, 384)]


def get_init_inputs():
    return [384]
