import torch
import torch.nn as nn


class Scores(nn.Module):
    """Attention logits per head: q @ k^T over [batch, heads, tokens, head_dim], scaled."""

    def __init__(self, head_dim: int):
        super().__init__()
        self.scale = head_dim ** -0.5

    def forward(self, q, k):
        return (q @ k.transpose(-2, -1)) * self.scale


Model = Scores


def get_inputs():
    return [torch.randn(2, 3, 128, 64, dtype=torch.float16), torch.randn(2, 3, 96, 64, dtype=torch.float16)]


def get_init_inputs():
    return [64]
