import torch
import torch.nn as nn


class Model(nn.Module):
    """SGD with momentum and weight decay; the constructor's names say nothing
    (``step_size`` is the learning rate, ``mu`` the momentum, ``min_v`` the decay)."""

    def __init__(self, step_size: float, mu: float, min_v: float):
        super().__init__()
        self.step_size, self.mu, self.min_v = step_size, mu, min_v

    def forward(self, param, grad, momentum_buffer):
        g = grad + self.min_v * param
        buf = self.mu * momentum_buffer + g
        return param - self.step_size * buf


def get_inputs():
    return [torch.randn(2048, 8192) for _ in range(3)]


def get_init_inputs():
    return [0.05, 0.8, 3e-3]
