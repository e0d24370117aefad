import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.MaxPool3d(kernel 2, stride 2) followed by a ReLU (indices unused)."""

    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool3d(kernel_size=2, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.pool(x))


def get_inputs():
    return [torch.randn(8, 32, 32, 64, 64)]


def get_init_inputs():
    return []
