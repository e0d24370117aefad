"""get_init_inputs() returns a dict (keyword arguments) whose key the constructor does not take."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, *, k: int = 2):
        super().__init__()
        self.k = k

    def forward(self, x):
        return x * self.k


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return {"kk": 3}
