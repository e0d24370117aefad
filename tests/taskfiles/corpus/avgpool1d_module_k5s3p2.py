import torch
import torch.nn as nn


class Model(nn.Module):
    """Moving average over a signal: window 5, hop 3, two zeros of padding each side."""

    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool1d(kernel_size=5, stride=3, padding=2)

    def forward(self, signal):
        return self.pool(signal)


def get_inputs():
    return [torch.randn(4, 7, 1001)]


def get_init_inputs():
    return []
