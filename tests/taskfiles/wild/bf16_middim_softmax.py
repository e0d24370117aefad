import torch
import torch.nn as nn


class Model(nn.Module):
    """bf16 softmax at temperature 2 over the middle dim (prime length 199) of [4, 199, 256]."""

    def __init__(self):
        super().__init__()

    def forward(self, x) -> torch.Tensor:
        return torch.softmax(x / 2.0, dim=1)


def get_inputs():
    return [torch.randn(4, 199, 256, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
