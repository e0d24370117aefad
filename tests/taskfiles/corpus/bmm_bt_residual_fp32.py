"""bmm against a transposed batch (b.transpose(1, 2)) plus a same-shape residual."""
import torch


class Model(torch.nn.Module):
    def forward(self, a, b, r):
        return torch.bmm(a, b.transpose(1, 2)) + r


def get_inputs():
    return [torch.randn(12, 256, 96), torch.randn(12, 200, 96), torch.randn(12, 256, 200)]


def get_init_inputs():
    return []
