"""A 3-D activation [8, 4096, 512] times a [512, 192] matrix with torch.matmul (the batch dims merge
into 32768 rows), fp16: one 192-column block whose whole 512-deep panel fits L1 beside the A stages."""
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, h, w):
        return torch.matmul(h, w)


def get_inputs():
    return [torch.randn(8, 4096, 512, dtype=torch.float16), torch.randn(512, 192, dtype=torch.float16) * 0.05]


def get_init_inputs():
    return []
