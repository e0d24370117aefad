import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax of x / T over the last dim, T a one-element tensor input (drawn per seed) and
    clamped below by a constructor floor."""

    def __init__(self, floor=0.25):
        super().__init__()
        self.floor = floor

    def forward(self, x, temperature):
        return torch.softmax(x / temperature.clamp(min=self.floor), dim=-1)


def get_inputs():
    return [torch.randn(97, 3001), torch.rand(1) * 2.0]


def get_init_inputs():
    return [0.25]
