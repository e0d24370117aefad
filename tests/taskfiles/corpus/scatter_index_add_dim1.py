import torch
import torch.nn as nn


class Model(nn.Module):
    """index_add on the middle dim of a non-zero base: per-sample updates accumulated into
    slots, repeated slots summed (odd sizes)."""

    def forward(self, base, slots, updates):
        return base.index_add(1, slots, updates)


def get_inputs():
    return [torch.randn(3, 17, 29), torch.randint(0, 17, (41,)), torch.randn(3, 41, 29)]


def get_init_inputs():
    return []
