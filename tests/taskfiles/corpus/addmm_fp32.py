import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.addmm: a row bias plus a product."""

    def __init__(self):
        super().__init__()

    def forward(self, bias, A, B):
        return torch.addmm(bias, A, B)


def get_inputs():
    return [torch.randn(384), torch.randn(512, 256), torch.randn(256, 384)]


def get_init_inputs():
    return []
