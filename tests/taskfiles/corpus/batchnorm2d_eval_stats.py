import torch
import torch.nn as nn


class Model(nn.Module):
    """BatchNorm2d in eval mode with non-trivial running statistics and affine."""

    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm2d(c)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.normal_(1, 0.2)
            self.bn.bias.normal_(0, 0.2)
        self.bn.eval()

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(8, 24, 56, 56)]


def get_init_inputs():
    return [24]
