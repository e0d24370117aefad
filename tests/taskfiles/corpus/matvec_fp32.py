import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix times vector."""

    def __init__(self):
        super().__init__()

    def forward(self, A, v):
        return torch.matmul(A, v)


def get_inputs():
    return [torch.randn(2048, 1024), torch.randn(1024)]


def get_init_inputs():
    return []
