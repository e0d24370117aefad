"""Row standardisation written with torch.var_mean (a tuple result) and rsqrt, bf16 input."""
import torch
from torch import nn


class Standardize(nn.Module):
    def __init__(self, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var, mean = torch.var_mean(x.float(), dim=-1, keepdim=True, correction=0)
        return ((x.float() - mean) * torch.rsqrt(var + self.eps)).to(x.dtype)


Model = Standardize


def get_inputs():
    return [torch.randn(6144, 1536).to(torch.bfloat16)]


def get_init_inputs():
    return []
