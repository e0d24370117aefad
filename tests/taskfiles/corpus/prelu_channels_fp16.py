"""nn.PReLU with one weight per channel on fp16 NCHW input: the module runs in the inputs' dtype
(PReLU does not promote fp32 weights against fp16 inputs), on meta tensors too."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.act = nn.PReLU(c, init=0.1)
        with torch.no_grad():
            self.act.weight.copy_(torch.linspace(0.05, 0.3, c))

    def forward(self, x):
        return self.act(x)


def get_inputs():
    return [torch.randn(16, 96, 56, 56, dtype=torch.float16)]


def get_init_inputs():
    return [96]
