"""A constant that is a multiple of a shape-dependent value (label-smoothing style eps / C): the
frontend fits the factor on one shape set and checks it on the others."""

import torch


class Model(torch.nn.Module):
    def __init__(self, eps: float = 0.3):
        super().__init__()
        self.eps = eps

    def forward(self, logits):
        return (1.0 - self.eps) * logits.amax(dim=1) + (self.eps / logits.shape[1]) * logits.sum(dim=1)


def get_inputs():
    return [torch.randn(2048, 1000)]


def get_init_inputs():
    return [0.3]
