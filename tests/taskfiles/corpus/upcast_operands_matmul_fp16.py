"""fp16 inputs multiplied in fp32 for accuracy: a.float() @ b.float(), result kept fp32."""
import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        return a.float() @ b.float()


def get_inputs():
    return [torch.randn(1024, 2048, dtype=torch.float16), torch.randn(2048, 768, dtype=torch.float16)]


def get_init_inputs():
    return []
