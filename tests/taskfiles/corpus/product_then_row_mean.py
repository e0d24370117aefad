"""Mean over the output features of a product: (x @ W).mean(-1), W a Parameter, fp32."""
import torch


class Model(torch.nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.W = torch.nn.Parameter(torch.randn(n_in, n_out) / n_in ** 0.5)

    def forward(self, x):
        return torch.matmul(x, self.W).mean(dim=-1)


def get_inputs():
    return [torch.randn(8192, 256)]


def get_init_inputs():
    return [256, 192]
