import torch
import torch.nn as nn


class Model(nn.Module):
    """Sigmoid-gated blend; the inputs have accented and Greek names."""

    def __init__(self):
        super().__init__()

    def forward(self, température: torch.Tensor, α: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(température) * α + température


def get_inputs():
    return [torch.randn(256, 1024), torch.randn(256, 1024)]


def get_init_inputs():
    return []
