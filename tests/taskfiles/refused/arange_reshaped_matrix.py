"""An arange reshaped into a matrix (its index along a dim no longer its own): refused, named."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x * torch.arange(x.numel() // x.shape[0], device=x.device).view(x.shape[1], -1)


def get_inputs():
    return [torch.randn(4, 6, 10)]


def get_init_inputs():
    return []
