"""torch.einsum("k,kn->n"): a vector times a matrix (one output row) - neither the cube templates
(a rank-1 operand) nor the graph frontend (products with one output column) serve it."""

import torch


class Model(torch.nn.Module):
    def forward(self, w, m):
        return torch.einsum("k,kn->n", w, m)


def get_inputs():
    return [torch.randn(4096), torch.randn(4096, 1024)]


def get_init_inputs():
    return []
