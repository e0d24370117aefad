import torch
import torch.nn as nn


class Model(nn.Module):
    """bf16 matmul."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return A @ B


def get_inputs():
    return [torch.randn(768, 512, dtype=torch.bfloat16), torch.randn(512, 640, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
