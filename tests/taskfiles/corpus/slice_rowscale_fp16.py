import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, tokens: torch.Tensor, per_row: torch.Tensor) -> torch.Tensor:
        body = tokens[:, 1:]  # drop the first column (a 2-byte offset in fp16)
        return body + per_row


def get_inputs():
    return [torch.randn(64, 4098, dtype=torch.float16), torch.randn(64, 1, dtype=torch.float16)]


def get_init_inputs():
    return []
