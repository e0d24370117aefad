"""torch.einsum("bij,j->bi") with a vector Parameter: a matrix-vector product the cube proposer
must decline (a rank-1 operand; before, its candidates were all infeasible and check said FAIL)
so the graph frontend serves it as a product and a row sum."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.linspace(-1.0, 1.0, d))
    def forward(self, x):
        return torch.einsum("bij,j->bi", x, self.w)

def get_inputs():
    return [torch.randn(16, 384, 1024)]

def get_init_inputs():
    return [1024]
