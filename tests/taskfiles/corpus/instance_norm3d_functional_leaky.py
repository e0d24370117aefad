import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, vol, gamma, beta):
        return F.leaky_relu(F.instance_norm(vol, weight=gamma, bias=beta, eps=1e-3), 0.2)


def get_inputs():
    return [torch.randn(2, 12, 6, 10, 14), torch.rand(12) + 0.5, torch.randn(12)]


def get_init_inputs():
    return []
