"""A batch of narrow long-K products folded into a residual with baddbmm's own scalars (fp32):
out = 0.5 * resid + 2 * (a @ b), 4 products of 256 x 16384 by 16384 x 128."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, beta: float = 0.5, alpha: float = 2.0) -> None:
        super().__init__()
        self.beta, self.alpha = beta, alpha

    def forward(self, resid: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(resid, a, b, beta=self.beta, alpha=self.alpha)


def get_inputs():
    g = torch.Generator().manual_seed(7)
    return [torch.randn(4, 256, 128, generator=g),
            torch.randn(4, 256, 16384, generator=g) / 16,
            torch.randn(4, 16384, 128, generator=g) / 16]


def get_init_inputs():
    return [0.5, 2.0]
