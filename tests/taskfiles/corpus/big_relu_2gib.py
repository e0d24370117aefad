import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU over a 2 GiB fp32 tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(32768, 16384)]


def get_init_inputs():
    return []
