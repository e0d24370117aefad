import torch
import torch.nn as nn


class Model(nn.Module):
    """bf16 SiLU of an input plus a [1, M] bias row."""

    def __init__(self):
        super().__init__()

    def forward(self, x, b) -> torch.Tensor:
        return torch.nn.functional.silu(x + b)


def get_inputs():
    return [torch.randn(1000, 1536, dtype=torch.bfloat16), torch.randn(1, 1536, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
