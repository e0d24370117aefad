import torch


class Model(torch.nn.Module):
    """A window whose rows sit at three spacings (two of three heads of each batch, T of L rows):
    no row-window form reads it."""

    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.randn(2, 3, 16, 24))

    def forward(self, x):
        return x + self.table[:, :2, :x.shape[2], :x.shape[3]]


def get_inputs():
    return [torch.randn(2, 2, 8, 20)]


def get_init_inputs():
    return []
