"""A narrow projection of many bf16 tokens: nn.Linear(1024, 256) without bias on 32768 rows. The
weight is stored [out, in] (B stored N x K); its 256 x 1024 panel is 512 KiB, all of a 910B core's L1."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d_in: int = 1024, d_out: int = 256):
        super().__init__()
        self.proj = nn.Linear(d_in, d_out, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.proj(tokens)


def get_inputs():
    return [torch.randn(32768, 1024).bfloat16()]


def get_init_inputs():
    return [1024, 256]
