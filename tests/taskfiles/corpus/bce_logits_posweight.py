"""nn.BCEWithLogitsLoss with a per-class pos_weight built in the constructor (a module buffer of
varying values, passed as an input), mean reduction."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.loss = nn.BCEWithLogitsLoss(pos_weight=torch.linspace(0.5, 2.0, classes), reduction="mean")

    def forward(self, logits, targets):
        return self.loss(logits, targets)


def get_inputs():
    return [torch.randn(2048, 80), torch.randint(0, 2, (2048, 80)).float()]


def get_init_inputs():
    return [80]
