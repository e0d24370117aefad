import torch
import torch.nn as nn


class Model(nn.Module):
    """ConvNeXt's LayerNorm for channels_first data, written out as its own code does."""

    def __init__(self, normalized_shape, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape) + 0.1 * torch.randn(normalized_shape))
        self.bias = nn.Parameter(0.1 * torch.randn(normalized_shape))
        self.eps = eps

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


def get_inputs():
    return [torch.randn(16, 96, 56, 56)]


def get_init_inputs():
    return [96]
