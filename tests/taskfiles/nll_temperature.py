import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Summed negative log-likelihood of temperature-scaled log-softmax (int64 targets)."""

    def __init__(self, temperature: float = 2.0):
        super().__init__()
        self.temperature = temperature

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logp = F.log_softmax(logits / self.temperature, dim=1)
        return F.nll_loss(logp, targets, reduction="sum")


batch_size = 8192
num_classes = 1000


def get_inputs():
    return [torch.randn(batch_size, num_classes),
            torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return [2.0]
