import torch
import torch.nn as nn


class Model(nn.Module):
    """Each row sorted ascending: a data-dependent permutation, no proposer expresses it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sort(x, dim=-1).values


def get_inputs():
    return [torch.randn(1024, 4096)]


def get_init_inputs():
    return []
