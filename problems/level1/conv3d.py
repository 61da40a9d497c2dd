"""3-D convolution with a cubic 3x3x3 kernel, stride 1, no padding."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Conv3d(in_channels, out_channels, kernel_size)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 8
in_channels = 16
out_channels = 32
kernel_size = 3
depth = 32
height = 64
width = 64

KJUDGE_SMALL = {"batch_size": 1, "in_channels": 2, "out_channels": 3, "depth": 5, "height": 6, "width": 6}
KJUDGE_TAGS = ["conv", "conv3d"]


def get_inputs():
    x = torch.randn(batch_size, in_channels, depth, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
