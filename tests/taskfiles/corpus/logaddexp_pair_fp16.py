import torch
from torch import nn


class Model(nn.Module):
    def forward(self, left, right):
        return torch.logaddexp(left, right).to(left.dtype)


def get_inputs():
    g = torch.Generator().manual_seed(3)
    return [torch.randn(64, 2049, generator=g).half() * 4, torch.randn(64, 2049, generator=g).half() * 4]


def get_init_inputs():
    return []
