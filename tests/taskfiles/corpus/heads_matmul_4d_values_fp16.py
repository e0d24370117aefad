"""Attention values of 4-D heads, fp16: torch.matmul(probs [4, 8, 1024, 256], values [4, 8, 256, 512]);
every dim before the matrix is batch (32 products) for the cube defaults (runs, split Fixpipe)."""
import torch
from torch import nn


class Model(nn.Module):
    """probs @ values over batch and heads."""

    def forward(self, probs, values):
        return torch.matmul(probs, values)


def get_inputs():
    return [torch.randn(4, 8, 1024, 256, dtype=torch.float16), torch.randn(4, 8, 256, 512, dtype=torch.float16)]
