import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear with odd sizes (999 -> 1001) on 1000 rows."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(1000, 999)]


def get_init_inputs():
    return [999, 1001]
