import torch
import torch.nn as nn


class Model(nn.Module):
    """fp16 argmin over the last dim, keepdim=True, prime sizes (int64 [N, 1] result)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.argmin(dim=2, keepdim=True)


def get_inputs():
    return [torch.randn(7, 13, 4099, dtype=torch.float16)]


def get_init_inputs():
    return []
