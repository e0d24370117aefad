import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.glu(x, dim=self.dim)


def get_inputs():
    return [torch.randn(64, 17, 1024)]


def get_init_inputs():
    return [-1]
