import torch


def get_init_inputs():
    return []


def get_inputs():
    g = torch.Generator().manual_seed(3)
    return [torch.randn(8, 200, 96, generator=g), torch.randn(8, 96, 300, generator=g)]


class Model(torch.nn.Module):
    def forward(self, left, right):
        s = torch.bmm(left, right)
        mu = s.mean(-1, keepdim=True)
        var = ((s - mu) ** 2).mean(-1, keepdim=True)
        return (s - mu) * torch.rsqrt(var + 1e-5)
