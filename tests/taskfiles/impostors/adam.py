import torch
import torch.nn as nn


class Model(nn.Module):
    """One Adam step; the constructor names its values its own way and takes them
    positionally only: a step size, the two decay rates as one tuple, and the floor
    added to the denominator."""

    def __init__(self, step_size, b=(0.8, 0.95), min_v=1e-6, /):
        super().__init__()
        self.step_size = step_size
        self.b1, self.b2 = b
        self.min_v = min_v

    def forward(self, param, grad, exp_avg, exp_avg_sq, step):
        m = self.b1 * exp_avg + (1 - self.b1) * grad
        v = self.b2 * exp_avg_sq + (1 - self.b2) * grad * grad
        m_hat = m / (1 - self.b1**step)
        v_hat = v / (1 - self.b2**step)
        return param - self.step_size * m_hat / (torch.sqrt(v_hat) + self.min_v)


n = 4096 * 4096


def get_inputs():
    return [torch.randn(n), torch.randn(n), torch.randn(n) * 0.1, torch.rand(n), 7]


def get_init_inputs():
    return [3e-3, (0.8, 0.95), 1e-7]
