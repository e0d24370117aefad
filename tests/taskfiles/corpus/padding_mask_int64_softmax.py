import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, scores, mask):
        return torch.softmax(scores.masked_fill(mask == 0, -1e4), dim=-1)


def get_inputs():
    return [torch.randn(8, 128, 300), torch.randint(0, 2, (8, 1, 300))]


def get_init_inputs():
    return []
