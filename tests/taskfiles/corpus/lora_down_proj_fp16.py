"""A LoRA down-projection: rank-16 nn.Linear(4096, 16, bias=False) of 16384 fp16 tokens, the
adapter's rank passed to the constructor. One 16-column block; its 4096 x 16 panel fits L1."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, hidden: int, rank: int):
        super().__init__()
        self.lora_a = nn.Linear(hidden, rank, bias=False)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.lora_a(hidden_states)


def get_inputs():
    return [torch.randn(16384, 4096, dtype=torch.float16)]


def get_init_inputs():
    return [4096, 16]
