import torch
import torch.nn as nn


def center(z, t):
    # subtract each row's largest logit, then divide by the temperature
    top = z.amax(dim=1, keepdim=True)
    return (z - top) / t


class Model(nn.Module):
    """Row-centred logits at a temperature kept as a plain float attribute; 100003 classes per row
    (prime, wider than UB), negative and positive values."""

    def __init__(self, temperature=0.7):
        super().__init__()
        self.temperature = float(temperature)

    def forward(self, logits):
        return center(logits, self.temperature)


def get_inputs():
    return [torch.randn(40, 100003) * 9.0 - 3.0]


def get_init_inputs():
    return [0.7]
