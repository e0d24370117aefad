import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, n_head, head_dim):
        super().__init__()
        self.n_head = n_head
        self.scale = 1.0 / math.sqrt(head_dim)

    def forward(self, att):
        B, H, T, S = att.shape
        mask = torch.tril(torch.ones(T, S, device=att.device))
        att = (att * self.scale).masked_fill(mask == 0, float("-inf"))
        return F.softmax(att, dim=-1)


def get_inputs():
    return [torch.randn(2, 12, 128, 128)]


def get_init_inputs():
    return [12, 64]
