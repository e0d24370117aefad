import torch
import torch.nn as nn


class Model(nn.Module):
    """Hinge loss with one +-1 label per sample broadcast over its scores ([N, 1] targets)."""

    def forward(self, scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return torch.mean(torch.clamp(1 - scores * labels, min=0))


def get_inputs():
    return [torch.randn(16384, 2048), torch.randint(0, 2, (16384, 1)).float() * 2 - 1]


def get_init_inputs():
    return []
