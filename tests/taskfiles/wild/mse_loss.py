import torch
import torch.nn as nn


class Model(nn.Module):
    """Named like the registry's mse_loss, but returns the per-sample mean squared error (one value per row), not one scalar."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets) -> torch.Tensor:
        return ((predictions - targets) ** 2).mean(dim=-1)


def get_inputs():
    return [torch.randn(4096, 333), torch.randn(4096, 333)]


def get_init_inputs():
    return []
