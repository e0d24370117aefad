import torch
import torch.nn as nn


class Model(nn.Module):
    """A dict of settings as the constructor argument."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = dict(cfg)

    def forward(self, x):
        return torch.relu(x) * self.cfg['gain'] + self.cfg['bias']


def get_inputs():
    return [torch.randn(1024, 1024)]


def get_init_inputs():
    return [{'gain': 3.0, 'bias': -1.0}]
