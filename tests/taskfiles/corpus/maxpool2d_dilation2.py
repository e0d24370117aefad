import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, x):
        return F.max_pool2d(x, 3, stride=2, padding=1, dilation=2)


def get_inputs():
    return [torch.randn(2, 8, 40, 40)]


def get_init_inputs():
    return []
