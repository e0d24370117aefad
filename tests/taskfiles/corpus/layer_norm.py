import torch
import torch.nn as nn


class Model(nn.Module):
    """Called layer_norm, centres rows without scaling."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x - x.mean(-1, keepdim=True)


def get_inputs():
    return [torch.randn(2048, 1024)]


def get_init_inputs():
    return []
