import torch
import torch.nn as nn


class Model(nn.Module):
    """scatter_add of edge features into zero-initialised node rows with the usual
    index.unsqueeze(1).expand_as(src) idiom (a message-passing aggregation)."""

    def __init__(self, nodes: int):
        super().__init__()
        self.nodes = nodes

    def forward(self, edge_feat, edge_dst):
        index = edge_dst.unsqueeze(1).expand_as(edge_feat)
        out = edge_feat.new_zeros(self.nodes, edge_feat.shape[1])
        return out.scatter_add(0, index, edge_feat)


def get_inputs():
    return [torch.randn(211, 33), torch.randint(0, 53, (211,))]


def get_init_inputs():
    return [53]
