import torch
import torch.nn as nn


class Model(nn.Module):
    """Gemm followed by LogSumExp over features (KernelBench level-2 style)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.linear(x)
        return torch.logsumexp(x, dim=1, keepdim=True)


batch_size = 1024
in_features = 512
out_features = 2048


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
