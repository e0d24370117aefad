import torch
import torch.nn as nn


class Model(nn.Module):
    """Row softmax of a product, scaled per row; the inputs are called like a C++ type, a C++
    keyword and a macro."""

    def __init__(self):
        super().__init__()

    def forward(self, float, new, FOO_BAR):
        return torch.softmax(float * new, dim=-1) * FOO_BAR


def get_inputs():
    return [torch.randn(512, 768), torch.randn(512, 768), torch.rand(512, 1)]


def get_init_inputs():
    return []
