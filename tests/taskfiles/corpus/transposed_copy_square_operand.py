"""A square weight made contiguous in its transposed layout before the product (bf16): the
kernel must read it transposed, though its shape alone cannot tell."""
import torch
from torch import nn


class Mixer(nn.Module):
    def __init__(self, d: int = 768) -> None:
        super().__init__()
        self.mix = nn.Parameter(torch.randn(d, d) / d ** 0.5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        w = self.mix.t().contiguous()
        return tokens @ w


Model = Mixer


def get_inputs():
    return [torch.randn(4096, 768).to(torch.bfloat16)]


def get_init_inputs():
    return [768]
