import torch
import torch.nn as nn


class Model(nn.Module):
    """Temporal-then-spatial max pooling: a (2, 3, 3) window, stride (1, 2, 2), ceil_mode."""

    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool3d((2, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1), ceil_mode=True)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(2, 3, 6, 17, 30, dtype=torch.float16)]


def get_init_inputs():
    return []
