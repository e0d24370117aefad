import torch
import torch.nn as nn


class Model(nn.Module):
    """fp16 matmul + ReLU whose inputs are named like the kernel's accumulator (`acc`) and its
    own output (`c`)."""

    def __init__(self):
        super().__init__()

    def forward(self, acc: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return torch.relu(torch.matmul(acc, c))


def get_inputs():
    return [torch.randn(512, 256, dtype=torch.float16), torch.randn(256, 384, dtype=torch.float16)]


def get_init_inputs():
    return []
