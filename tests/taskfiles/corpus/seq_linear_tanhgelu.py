import torch
import torch.nn as nn


class Model(nn.Module):
    """A projection and tanh-approximated GELU as a Sequential, on a [B, T, D] activation."""

    def __init__(self, d_in=384, d_out=640):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, d_out), nn.GELU(approximate="tanh"))

    def forward(self, h):
        return self.body(h)


def get_inputs():
    return [torch.randn(3, 170, 384)]


def get_init_inputs():
    return [384, 640]
