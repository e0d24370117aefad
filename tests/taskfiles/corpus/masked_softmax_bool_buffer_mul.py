"""Softmax over keys, then zeroed where a persistent bool keep-mask buffer is False (fp16)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, keys: int = 1024):
        super().__init__()
        keep = torch.ones(keys, dtype=torch.bool)
        keep[::7] = False
        self.register_buffer("keep", keep)

    def forward(self, scores):
        return scores.softmax(dim=-1) * self.keep


def get_inputs():
    return [torch.randn(4096, 1024, dtype=torch.float16)]


def get_init_inputs():
    return [1024]
