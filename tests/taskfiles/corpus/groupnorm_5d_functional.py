"""F.group_norm on a 5-D input with gamma / beta passed to forward; at the reduced shapes the
channel count equals the number of group rows, which must not make gamma a per-row value."""

import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, x, gamma, beta):
        return F.group_norm(x, 4, gamma, beta, eps=1e-6) * 0.5


def get_inputs():
    return [torch.randn(2, 48, 17, 19, 5), torch.rand(48) + 0.5, torch.randn(48)]


def get_init_inputs():
    return []
