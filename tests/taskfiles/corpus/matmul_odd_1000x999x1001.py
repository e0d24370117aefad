import torch
import torch.nn as nn


class Model(nn.Module):
    """fp32 matmul at odd sizes: 1000 x 999 times 999 x 1001."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(1000, 999), torch.randn(999, 1001)]


def get_init_inputs():
    return []
