"""A product scaled by a Python float passed at call time (forward's third argument)."""
import torch


class Model(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor, scale: float) -> torch.Tensor:
        return torch.mm(a, b) * scale


def get_inputs():
    return [torch.randn(1024, 768), torch.randn(768, 512), 0.125]


def get_init_inputs():
    return []
