import torch
import torch.nn as nn


class Blend(nn.Module):
    def __init__(self, w: float = 0.25):
        super().__init__()
        self.w = w

    def forward(self, a, b):
        return torch.lerp(a, b, self.w) + torch.hypot(a, b)


Model = Blend


def get_inputs():
    return [torch.randn(96, 777), torch.randn(96, 777)]


def get_init_inputs():
    return [0.4]
