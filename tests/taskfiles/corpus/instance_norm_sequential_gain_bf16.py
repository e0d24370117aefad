import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, channels: int = 48, eps: float = 1e-5):
        super().__init__()
        self.body = nn.Sequential(nn.InstanceNorm2d(channels, eps=eps, affine=True), nn.ReLU())
        self.gain = nn.Parameter(torch.full((1, channels, 1, 1), 0.5))

    def forward(self, x):
        return self.body(x) * self.gain + x


def get_inputs():
    return [torch.randn(6, 48, 33, 17, dtype=torch.bfloat16)]


def get_init_inputs():
    return [48]


Model = Block
