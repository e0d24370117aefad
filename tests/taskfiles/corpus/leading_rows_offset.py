import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, table):
        rest = table[1:]  # every row but the first: one offset into the tensor
        return rest * rest - 1.0


def get_inputs():
    return [torch.randn(1025, 257)]


def get_init_inputs():
    return []
