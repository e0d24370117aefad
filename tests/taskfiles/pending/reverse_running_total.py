# pending: flip(cumsum(flip(x*x))) is lowered as row total minus the running prefix; the subtraction cancels at the row's tail (5 of 16352 elements off by up to 6.5% relative at 32x511): a reverse-order scan is needed.
import torch


class Model(torch.nn.Module):
    """Not what the name says: a reversed running sum of squares."""
    def forward(self, x):
        return torch.flip(torch.cumsum(torch.flip(x * x, dims=[-1]), dim=-1), dims=[-1])

def get_inputs():
    return [torch.randn(96, 4099)]

def get_init_inputs():
    return []
