import torch
import torch.nn as nn


class Model(nn.Module):
    """fp16 LayerNorm with drawn weights."""

    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        nn.init.normal_(self.ln.weight, 1.0, 0.1)
        nn.init.normal_(self.ln.bias, 0.0, 0.1)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(2048, 1024, dtype=torch.float16)]


def get_init_inputs():
    return [1024]
