import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """GeGLU: the projection's two halves by torch.split with an explicit list of sizes."""

    def forward(self, proj):
        half = proj.shape[-1] // 2
        value, gate = torch.split(proj, [half, half], dim=-1)
        return value * F.gelu(gate)


def get_inputs():
    return [torch.randn(16, 48, 2 * 1000)]


def get_init_inputs():
    return []
