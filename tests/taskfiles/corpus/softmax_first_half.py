import torch


class Model(torch.nn.Module):
    def __init__(self, temperature=2.0):
        super().__init__()
        self.temperature = temperature

    def forward(self, logits):
        a, _ = logits.chunk(2, dim=-1)
        return torch.softmax(a / self.temperature, dim=-1)


def get_inputs():
    return [torch.randn(96, 2 * 1000)]


def get_init_inputs():
    return [2.0]
