import torch
import torch.nn as nn


class Model(nn.Module):
    """An EMA-style update whose coefficients come as one tuple argument `betas`."""

    def __init__(self, betas=(0.9, 0.999)):
        super().__init__()
        self.betas = tuple(betas)

    def forward(self, param, grad) -> torch.Tensor:
        b1, b2 = self.betas
        return param * b1 + grad * (1.0 - b1) - b2 * grad * grad


def get_inputs():
    return [torch.randn(2048, 1024), torch.randn(2048, 1024)]


def get_init_inputs():
    return [(0.8, 0.5)]
