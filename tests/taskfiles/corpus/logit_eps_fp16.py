"""torch.logit with eps on fp16 probabilities (the input clamped to [eps, 1 - eps] first)."""

import torch


class Model(torch.nn.Module):
    def forward(self, p):
        return torch.logit(p, eps=1e-4)


def get_inputs():
    return [torch.rand(8192, 1000, dtype=torch.float16)]


def get_init_inputs():
    return []
