"""Scores of 3000 queries against 200 prototypes, as log-probabilities at a learned temperature:
a bias-free projection held as a raw Parameter (not nn.Linear), the temperature a one-element
Parameter, bf16 throughout."""
import torch
import torch.nn as nn


class PrototypeScores(nn.Module):
    def __init__(self, dim=512, prototypes=200):
        super().__init__()
        gen = torch.Generator().manual_seed(11)
        self.protos = nn.Parameter(torch.randn(dim, prototypes, generator=gen).to(torch.bfloat16) * 0.05)
        self.log_tau = nn.Parameter(torch.tensor([-0.7], dtype=torch.bfloat16))

    def forward(self, queries):
        logits = torch.matmul(queries, self.protos)
        return torch.log_softmax(logits / self.log_tau.exp(), dim=-1)


Model = PrototypeScores


def get_inputs():
    return [torch.randn(3000, 512, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
