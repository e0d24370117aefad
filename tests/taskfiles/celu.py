import torch
import torch.nn as nn


class Model(nn.Module):
    """CELU activation with a non-default alpha (not in the registry's form)."""

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.celu(x, alpha=self.alpha)


batch_size = 4096
dim = 16384


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [0.5]
