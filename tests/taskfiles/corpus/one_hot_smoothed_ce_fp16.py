import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Label-smoothed cross entropy written with one_hot, as training scripts do by hand."""

    def __init__(self, num_classes: int, smoothing: float = 0.1):
        super().__init__()
        self.num_classes, self.smoothing = num_classes, smoothing

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        logp = F.log_softmax(logits.float(), dim=-1)
        soft = F.one_hot(target, self.num_classes).float() * (1 - self.smoothing) + self.smoothing / self.num_classes
        return -(soft * logp).sum(-1).mean()


def get_inputs():
    return [torch.randn(1024, 5000, dtype=torch.float16), torch.randint(0, 5000, (1024,))]


def get_init_inputs():
    return [5000, 0.1]
