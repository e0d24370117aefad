"""Cross-covariance of two feature sets over a shared leading axis, with tensordot (bf16).

tensordot contracts dim 0 of both operands (49152 samples): a 384 x 192 result from two
tall inputs - the contraction axis is the outer one of both."""
import torch
import torch.nn as nn


class CrossCov(nn.Module):
    def __init__(self, contract_a, contract_b):
        super().__init__()
        self.dims = ([contract_a], [contract_b])

    def forward(self, left, right):
        return torch.tensordot(left, right, dims=self.dims)


Model = CrossCov

SAMPLES = 49152


def get_inputs():
    return [torch.randn(SAMPLES, 384).to(torch.bfloat16),
            (0.25 * torch.randn(SAMPLES, 192)).to(torch.bfloat16)]


def get_init_inputs():
    return [0, 0]
