import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.bmm over a batch of fp32 matrices."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.bmm(A, B)


def get_inputs():
    return [torch.randn(8, 128, 256), torch.randn(8, 256, 192)]


def get_init_inputs():
    return []
