import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.logical_xor(a > 0, torch.logical_and(b < 0.5, a.abs() < 1.0))


def get_inputs():
    return [torch.randn(333, 777), torch.rand(333, 777)]


def get_init_inputs():
    return []
