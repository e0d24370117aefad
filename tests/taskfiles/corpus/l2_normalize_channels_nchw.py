"""F.normalize over the channel dim of an NCHW feature map (p=2, eps from the constructor)."""
import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, fmap):
        return F.normalize(fmap, p=2.0, dim=1, eps=self.eps)


def get_inputs():
    return [torch.randn(8, 96, 56, 56)]


def get_init_inputs():
    return [1e-6]
