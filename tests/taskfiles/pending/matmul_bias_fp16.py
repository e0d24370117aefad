# pending: wrong at fp16 tolerance: the reference rounds the matmul to fp16 before the bias add, the fp32 epilogue does not, and the DSL casts to f16 only on a store (max abs err 0.0625 > atol=rtol=1e-3); mirroring the rounding in f32 still leaves 1-ulp flips from the accumulation order.
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
