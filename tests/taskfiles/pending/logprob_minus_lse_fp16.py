# pending: fp16 x - logsumexp(x, keepdim): the frontend rounds the fp32 log-normaliser to fp16 once, eager's fp16 logsumexp differs from that by 1-2 fp16 ulps at some rows (seen at randn*3 logits and at +-80, where lse ~80 has an ulp of 0.0625), so x - lse fails the fp16 tolerance (two-pass and online candidates alike)
import torch
import torch.nn as nn


class Model(nn.Module):
    """Token log-probabilities written as logits minus their log-normaliser (keepdim), over a
    vocabulary too wide for one UB row, in fp16."""

    def __init__(self):
        super().__init__()

    def forward(self, logits_half):
        return logits_half - torch.logsumexp(logits_half, -1, keepdim=True)


def get_inputs():
    return [(torch.randn(384, 24001) * 3.0).to(torch.float16)]


def get_init_inputs():
    return []
