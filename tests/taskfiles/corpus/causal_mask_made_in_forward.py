"""A causal mask built in forward by factory calls without device= (torch.ones(...).tril()): it
loads and traces (the factory runs on meta beside the inputs); the mask is a comparison of
each element's column with its row's index (row_position), no mask tensor."""
import torch
from torch import nn


class Model(nn.Module):
    """Causal softmax with the mask built in forward (no device= on the factory call)."""

    def forward(self, s):
        t = s.shape[-1]
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        return torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)


def get_inputs():
    return [torch.randn(4, 256, 256)]
