import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.classes = classes

    def forward(self, logits, labels):
        oh = F.one_hot(labels, self.classes).to(logits.dtype)
        return (logits * oh).sum(-1)


def get_inputs():
    return [torch.randn(256, 1000), torch.randint(0, 1000, (256,))]


def get_init_inputs():
    return [1000]
