import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear followed by ReLU, fp16."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.proj = nn.Linear(d_in, d_out)

    def forward(self, x):
        return torch.relu(self.proj(x))


def get_inputs():
    return [torch.randn(256, 512, dtype=torch.float16)]


def get_init_inputs():
    return [512, 768]
