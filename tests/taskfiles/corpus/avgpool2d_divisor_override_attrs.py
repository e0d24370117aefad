import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    """Pooling arguments kept as module attributes; a fixed divisor (divisor_override)."""

    def __init__(self, kernel, stride, padding, divisor):
        super().__init__()
        self.kernel, self.stride, self.padding, self.divisor = kernel, stride, padding, divisor

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel, self.stride, self.padding, divisor_override=self.divisor)


def get_inputs():
    return [torch.randn(1, 16, 57, 57)]


def get_init_inputs():
    return [3, 2, 1, 4]
