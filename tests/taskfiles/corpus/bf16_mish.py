import torch
import torch.nn as nn


class Model(nn.Module):
    """bf16 Mish."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return nn.functional.mish(x)


def get_inputs():
    return [torch.randn(3072, 1024, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
