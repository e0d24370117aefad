import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, x):
        return F.max_pool3d(x, (2, 3, 3), stride=(1, 2, 1), padding=(1, 1, 0), dilation=(2, 1, 2))


def get_inputs():
    return [torch.randn(2, 3, 7, 12, 33)]


def get_init_inputs():
    return []
