"""F.linear on a (batch, tokens, features) fp16 tensor with a weight and bias handed in as inputs."""
import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, h, weight, bias):
        return F.linear(h, weight, bias)


def get_inputs():
    return [torch.randn(3, 700, 512).half(), (torch.randn(320, 512) / 22).half(), torch.randn(320).half()]


def get_init_inputs():
    return []
