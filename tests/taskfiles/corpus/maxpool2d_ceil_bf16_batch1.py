import torch
import torch.nn as nn


class Model(nn.Module):
    """An AlexNet-style overlapping max pool (3, stride 2, ceil_mode) on one bf16 image."""

    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(1, 24, 55, 55).to(torch.bfloat16)]


def get_init_inputs():
    return []
