import torch
import torch.nn as nn


class Model(nn.Module):
    """fp16 NCHW input plus a per-channel bias [1, C, 1, 1], then ReLU."""

    def __init__(self):
        super().__init__()

    def forward(self, x, b) -> torch.Tensor:
        return torch.relu(x + b)


def get_inputs():
    return [torch.randn(8, 32, 56, 56, dtype=torch.float16), torch.randn(1, 32, 1, 1, dtype=torch.float16)]


def get_init_inputs():
    return []
