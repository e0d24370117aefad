import torch
import torch.nn as nn


class Model(nn.Module):
    """Layer norm without affine over a prime width (1021)."""

    def __init__(self):
        super().__init__()

    def forward(self, x) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), eps=1e-5)


def get_inputs():
    return [torch.randn(613, 1021)]


def get_init_inputs():
    return []
