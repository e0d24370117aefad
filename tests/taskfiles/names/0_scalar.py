import torch
import torch.nn as nn


class Model(nn.Module):
    """Scaled leaky ramp with a Python-number input; the names are a CANN API word and a C
    macro, and the file name starts with a digit."""

    def __init__(self):
        super().__init__()

    def forward(self, workspace: torch.Tensor, NULL: float) -> torch.Tensor:
        return torch.relu(workspace) * NULL + workspace * 0.01


def get_inputs():
    return [torch.randn(1024, 1024), 0.75]


def get_init_inputs():
    return []
