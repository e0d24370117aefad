import torch
import torch.nn as nn


class Model(nn.Module):
    """Token log-probabilities written as logits minus their log-normaliser (keepdim), over a
    vocabulary too wide for one UB row, in fp16 with logits spread over +-80."""

    def __init__(self):
        super().__init__()

    def forward(self, logits_half):
        return logits_half - torch.logsumexp(logits_half, -1, keepdim=True)


def get_inputs():
    return [(torch.rand(37, 24001) * 160.0 - 80.0).to(torch.float16)]


def get_init_inputs():
    return []
