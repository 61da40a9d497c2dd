"""2-D convolution with a square 3x3 kernel, stride 1, padding 1, with bias."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 32
in_channels = 64
out_channels = 128
kernel_size = 3
height = 128
width = 128

KJUDGE_SMALL = {"batch_size": 2, "in_channels": 3, "out_channels": 4, "height": 8, "width": 8}
KJUDGE_TAGS = ["conv", "conv2d"]


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
