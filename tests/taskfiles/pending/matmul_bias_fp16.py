# pending: wrong at fp16 tolerance on 1 element in ~24k: the reference rounds the product to fp16 before the bias add. The cube path's rounded candidate (workspace(f16), bias added after) mirrors that rounding (mean abs err 1.5e-6), but a 1-ulp flip of the product from a different fp32 accumulation order, at |a@b| in [8, 16), survives the bias add when the bias cancels most of it (got 5.67969, expected 5.67188 > atol+rtol*|e|): per-element 1e-3 of the final value cannot absorb an ulp of the larger intermediate.
import torch
import torch.nn as nn


class Model(nn.Module):
    """fp16 matmul + bias broadcast over rows + ReLU (a task file, not the registry op)."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b, bias) -> torch.Tensor:
        return torch.relu(torch.matmul(a, b) + bias)


def get_inputs():
    return [torch.randn(512, 256, dtype=torch.float16), torch.randn(256, 384, dtype=torch.float16), torch.randn(384, dtype=torch.float16)]


def get_init_inputs():
    return []
