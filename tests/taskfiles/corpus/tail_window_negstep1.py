import torch


class Model(torch.nn.Module):
    def __init__(self, keep):
        super().__init__()
        self.keep = keep

    def forward(self, x):
        # the last `keep` columns, written with a negative start and an explicit step of 1
        n = x.shape[-1]
        return torch.tanh(x[..., -(n - self.keep)::1]) * 0.5


def get_inputs():
    return [torch.randn(6, 40, 4097 + 3)]


def get_init_inputs():
    return [3]
