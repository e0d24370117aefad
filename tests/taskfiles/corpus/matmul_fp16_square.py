import torch
import torch.nn as nn


class Model(nn.Module):
    """fp16 matmul of two square matrices."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(1024, 1024, dtype=torch.float16), torch.randn(1024, 1024, dtype=torch.float16)]


def get_init_inputs():
    return []
