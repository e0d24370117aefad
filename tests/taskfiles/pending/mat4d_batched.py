# pending: a 4-D batched product (q @ k on [2, 3, 128, 64] x [2, 3, 64, 96]) traces to bmm of the inputs viewed as [6, ...]; the batched cube kernel takes 3-D tensors only, so it is refused (cube: a batched product of inputs that are not 3-D).
import torch


class Model(torch.nn.Module):
    def forward(self, q, k):
        return q @ k


def get_inputs():
    return [torch.randn(2, 3, 128, 64), torch.randn(2, 3, 64, 96)]


def get_init_inputs():
    return []
