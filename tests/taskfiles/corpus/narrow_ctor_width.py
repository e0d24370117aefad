import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, width: int, margin: int):
        super().__init__()
        self.width, self.margin = width, margin

    def forward(self, feats):
        # the centre of each row: `margin` columns dropped on both sides of a constructor-set width
        win = feats.narrow(-1, self.margin, self.width - 2 * self.margin)
        return win * torch.sigmoid(win)


def get_inputs():
    return [torch.randn(512, 1000)]


def get_init_inputs():
    return [1000, 7]
