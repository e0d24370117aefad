import torch


class Model(torch.nn.Module):
    def forward(self, att):
        keep = torch.ones_like(att, dtype=torch.bool).tril(diagonal=-1)
        return torch.softmax(att.masked_fill(~keep, -1e4), dim=-1)


def get_inputs():
    return [torch.randn(2, 3, 77, 77)]


def get_init_inputs():
    return []
