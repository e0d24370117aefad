import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, x):
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up


def get_inputs():
    return [torch.randn(64, 37, 2 * 688)]


def get_init_inputs():
    return []
