import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.alpha = nn.Parameter(torch.tensor([0.7]))

    def forward(self, x):
        return torch.where(x > 0, x, self.alpha * (torch.exp(x) - 1))


def get_inputs():
    return [torch.randn(1000, 3000)]


def get_init_inputs():
    return []
