"""A projection scaled by a 0-d temperature kept as a registered buffer (not a Python number)."""
import torch
import torch.nn as nn


class Projector(nn.Module):
    def __init__(self, d_in=512, d_out=384, temperature=0.07):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d_out, d_in) * d_in ** -0.5)
        self.register_buffer("inv_t", torch.tensor(1.0 / temperature))

    def forward(self, feats):
        return (feats @ self.weight.T) * self.inv_t


Model = Projector


def get_inputs():
    return [torch.randn(4096, 512)]


def get_init_inputs():
    return [512, 384, 0.07]
