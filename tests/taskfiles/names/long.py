import torch
import torch.nn as nn


class Model(nn.Module):
    """Row softmax of a scaled input minus a second one; one input name has 80 characters,
    the other is `__x` (which Python turns into `_Model__x` inside the class)."""

    def __init__(self):
        super().__init__()

    def forward(self, activations_of_the_previous_layer_before_the_temperature_scaling_is_applied_now, __x):
        scaled = activations_of_the_previous_layer_before_the_temperature_scaling_is_applied_now * 2.0
        return torch.softmax(scaled, dim=-1) - __x


def get_inputs():
    return [torch.randn(128, 2048), torch.randn(128, 2048)]


def get_init_inputs():
    return []
