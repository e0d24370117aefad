import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.AvgPool2d with a different kernel, stride and padding per dim."""

    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0))

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(4, 8, 33, 64)]


def get_init_inputs():
    return []
