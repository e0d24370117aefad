import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, h, w):
        super().__init__()
        self.ln = nn.LayerNorm([h, w], elementwise_affine=False)

    def forward(self, x, res):
        return self.ln(x + res) + res


def get_inputs():
    return [torch.randn(12, 30, 50), torch.randn(12, 30, 50)]


def get_init_inputs():
    return [30, 50]
