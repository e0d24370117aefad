"""RMS normalisation with an affine bias, fp32 statistics of the input; the constructor takes
keyword-only arguments and get_init_inputs() returns them as a dict (called Model(**kwargs))."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """RMSNorm with bias; keyword-only constructor."""

    def __init__(self, *, features: int, eps: float = 1e-6, bias: bool = True):
        super().__init__()
        self.w = nn.Parameter(torch.randn(features) * 0.1 + 1)
        self.b = nn.Parameter(torch.zeros(features)) if bias else None
        self.eps = eps

    def forward(self, h):
        r = h * torch.rsqrt(h.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return r * self.w + self.b


def get_inputs():
    return [torch.randn(8, 333, 768)]


def get_init_inputs():
    return dict(features=768, eps=1e-5)
