"""Conv2d, GroupNorm and GELU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """gelu(group_norm(conv2d(x)))."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, num_groups: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.gn = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.gn(self.conv(x)))


batch_size = 32
in_channels = 32
out_channels = 64
kernel_size = 3
num_groups = 8
height = 128
width = 128

KJUDGE_SMALL = {
    "batch_size": 2,
    "in_channels": 3,
    "out_channels": 4,
    "num_groups": 2,
    "height": 8,
    "width": 8,
}
KJUDGE_TAGS = ["fused", "conv", "conv2d", "normalization", "activation"]


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups]
