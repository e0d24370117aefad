import torch
import torch.nn as nn


class Model(nn.Module):
    """A numerically shifted log-sum-exp spelled out over axis 1 of an fp16 tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, q):
        top = q.amax(dim=1, keepdim=True)
        return (top + torch.log(torch.exp(q - top).sum(dim=1, keepdim=True))).squeeze(1)


def get_inputs():
    return [torch.randn(24, 1500, 130, dtype=torch.float16) * 4.0]


def get_init_inputs():
    return []
