import torch
import torch.nn as nn


class Model(nn.Module):
    """Causal attention weights (fp16): scores masked by a registered lower-triangular bool buffer."""

    def __init__(self, seq: int = 128, dim: int = 64):
        super().__init__()
        self.scale = dim ** -0.5
        self.register_buffer("causal", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, q, k):
        s = (q @ k.transpose(-2, -1)) * self.scale
        s = s.masked_fill(~self.causal, float("-inf"))
        return torch.softmax(s, dim=-1)


def get_inputs():
    return [torch.randn(128, 64, dtype=torch.float16), torch.randn(128, 64, dtype=torch.float16)]


def get_init_inputs():
    return [128, 64]
