import torch
from torch import nn


class LogitsAdjust(nn.Module):
    """Next-token logits of a small batch, shifted by a learned per-token bias and scaled."""

    def __init__(self, vocab, temperature=0.7):
        super().__init__()
        self.token_bias = nn.Parameter(torch.linspace(-1.0, 1.0, vocab))
        self.temperature = temperature

    def forward(self, logits):
        return (logits + self.token_bias) / self.temperature


Model = LogitsAdjust


def get_inputs():
    return [torch.randn(2, 131072, dtype=torch.float16)]


def get_init_inputs():
    return [131072]
