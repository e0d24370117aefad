"""baddbmm whose addend is one matrix broadcast over the batch ([1, M, N])."""
import torch


class Model(torch.nn.Module):
    def forward(self, resid, a, b):
        return torch.baddbmm(resid, a, b)


def get_inputs():
    return [torch.randn(1, 128, 96), torch.randn(8, 128, 320), torch.randn(8, 320, 96)]


def get_init_inputs():
    return []
