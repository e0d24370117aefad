import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    """Next-token probabilities for a single sequence: softmax over a 152064-entry vocabulary."""
    def forward(self, logits):
        return F.softmax(logits[:, -1, :] / 0.8, dim=-1)


def get_inputs():
    return [torch.randn(1, 3, 152064)]


def get_init_inputs():
    return []
