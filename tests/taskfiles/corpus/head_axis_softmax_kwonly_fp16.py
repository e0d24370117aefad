import torch
from torch import nn


class HeadMix(nn.Module):
    """Softmax over the head axis of [B, heads, T, T] scores, scaled by a per-head Parameter."""

    def __init__(self, *, heads: int, init_scale: float = 0.5):
        super().__init__()
        self.head_scale = nn.Parameter(torch.full((1, heads, 1, 1), init_scale))

    def forward(self, scores):
        return torch.softmax(scores * self.head_scale, dim=1)


Model = HeadMix


def get_inputs():
    return [torch.randn(2, 12, 128, 128, dtype=torch.float16)]


def get_init_inputs():
    return {"heads": 12, "init_scale": 0.7}
