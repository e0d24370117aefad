import torch
import torch.nn as nn


class Model(nn.Module):
    """Batched A @ B^T (attention scores), fp16."""

    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        return torch.bmm(q, k.transpose(1, 2))


def get_inputs():
    return [torch.randn(4, 128, 64, dtype=torch.float16), torch.randn(4, 192, 64, dtype=torch.float16)]


def get_init_inputs():
    return []
