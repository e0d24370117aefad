"""torch.einsum("k,kn->n"): a vector times a matrix (one output row). The cube templates take
no rank-1 operand; the graph frontend sums over the matrix's first dim, the vector read one value
a step (load_step)."""

import torch


class Model(torch.nn.Module):
    def forward(self, w, m):
        return torch.einsum("k,kn->n", w, m)


def get_inputs():
    return [torch.randn(4096), torch.randn(4096, 1024)]


def get_init_inputs():
    return []
