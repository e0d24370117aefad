import torch


def make():
    return torch.nn.Identity()

class Model(torch.nn.Module):
    """torch.matmul of a 1-D fp16 vector and a 2-D matrix (vector on the left), N not a multiple of 16."""
    def forward(self, v, mat):
        return torch.matmul(v, mat)

def get_inputs():
    g = torch.Generator().manual_seed(3)
    return [torch.randn(2500, generator=g, dtype=torch.float16),
            torch.randn(2500, 333, generator=g, dtype=torch.float16)]

def get_init_inputs():
    return []
