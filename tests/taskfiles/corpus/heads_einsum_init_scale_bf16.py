"""Per-head attention logits with einsum; the scale comes from the constructor's head_dim."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, head_dim=64):
        super().__init__()
        self.scale = head_dim ** -0.5

    def forward(self, q, k):
        return torch.einsum("bhqd,bhkd->bhqk", q, k) * self.scale


def get_inputs():
    return [torch.randn(2, 6, 384, 64).bfloat16(), torch.randn(2, 6, 384, 64).bfloat16()]


def get_init_inputs():
    return [64]
