# pending: slicing (chunk/split/narrow) along the last dim: SwiGLU's x.chunk(2, -1) is two column ranges of one input with a row pitch of twice their width, and the DSL's loads read whole rows of a tensor (graph frontend: aten.split.Tensor: data movement (slicing, concatenation, indexing) has no DSL form). Needs a load with a column offset and a GM row pitch (DataCopy/DataCopyPad with a source stride).
import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, x):
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up


def get_inputs():
    return [torch.randn(64, 37, 2 * 688)]


def get_init_inputs():
    return []
