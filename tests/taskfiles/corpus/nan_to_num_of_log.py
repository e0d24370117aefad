import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.nan_to_num(torch.log(x), nan=0.0, neginf=-100.0, posinf=100.0)


def get_inputs():
    x = torch.randn(512, 4096)
    x[::5] = 0.0
    return [x]


def get_init_inputs():
    return []
