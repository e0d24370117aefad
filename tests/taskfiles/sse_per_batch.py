import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum-of-squares loss divided by the batch size (a shape-derived divisor)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        d = predictions - targets
        return torch.sum(d * d) / predictions.shape[0]


def get_inputs():
    return [torch.randn(4096, 8192), torch.randn(4096, 8192)]


def get_init_inputs():
    return []
