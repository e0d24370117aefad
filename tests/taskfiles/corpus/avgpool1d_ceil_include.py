import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    """Frames of a signal averaged with ceil_mode: the last window is clipped at the padding's end."""

    def forward(self, x):
        return F.avg_pool1d(x, kernel_size=4, stride=3, padding=1, ceil_mode=True)


def get_inputs():
    return [torch.randn(6, 4, 1000)]


def get_init_inputs():
    return []
