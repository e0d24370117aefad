import torch
import torch.nn as nn


class Model(nn.Module):
    """Keyword-only constructor args: alpha and beta."""

    def __init__(self, *, alpha=1.5, beta=0.5):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x):
        return self.alpha * torch.tanh(self.beta * x)


def get_inputs():
    return [torch.randn(1000, 1000)]


def get_init_inputs():
    return []
