"""GroupNorm over (batch, channels, height, width)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.GroupNorm(num_groups, channels)."""

    def __init__(self, num_groups: int, channels: int):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


batch_size = 32
channels = 64
num_groups = 8
height = 256
width = 256

KJUDGE_SMALL = {"batch_size": 2, "channels": 8, "num_groups": 2, "height": 4, "width": 4}
KJUDGE_TAGS = ["normalization", "reduction"]


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [num_groups, channels]
