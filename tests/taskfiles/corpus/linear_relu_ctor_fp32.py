import torch
from torch import nn


class Model(nn.Module):
    """A keyword-only constructor building an nn.Sequential of a Linear and an in-place ReLU."""

    def __init__(self, *, features_in: int = 300, features_out: int = 200):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(features_in, features_out), nn.ReLU(inplace=True))

    def forward(self, tokens):
        return self.mlp(tokens)


def get_inputs():
    return [torch.randn(64, 300)]


def get_init_inputs():
    return []
