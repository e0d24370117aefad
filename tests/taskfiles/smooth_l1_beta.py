import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.smooth_l1_loss with a non-default beta (the aten loss op, mean reduction)."""

    def __init__(self, beta: float = 0.5):
        super().__init__()
        self.beta = beta

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.smooth_l1_loss(predictions, targets, beta=self.beta)


def get_inputs():
    return [torch.randn(8192, 4096), torch.randn(8192, 4096)]


def get_init_inputs():
    return [0.5]
