import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.einsum("bijl,lk->bijk", A, B)


b, i, j, d, k = 4, 64, 32, 256, 384


def get_inputs():
    return [torch.randn(b, i, j, d), torch.randn(d, k)]


def get_init_inputs():
    return []
