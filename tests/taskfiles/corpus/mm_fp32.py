import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.mm of two fp32 matrices."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.mm(A, B)


def get_inputs():
    return [torch.randn(512, 256), torch.randn(256, 384)]


def get_init_inputs():
    return []
