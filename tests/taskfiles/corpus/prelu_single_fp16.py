import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.PReLU() with its one shared slope, set away from the default, the module in fp16 (NCHW input)."""

    def __init__(self):
        super().__init__()
        self.prelu = nn.PReLU()
        with torch.no_grad():
            self.prelu.weight.fill_(0.3125)
        self.prelu.half()

    def forward(self, x):
        return self.prelu(x)


def get_inputs():
    return [torch.randn(3, 5, 41, 43, dtype=torch.float16)]


def get_init_inputs():
    return []
