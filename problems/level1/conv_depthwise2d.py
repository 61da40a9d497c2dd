"""Depthwise 2-D convolution (groups == channels), 3x3, padding 1."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels)."""

    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 16
channels = 64
kernel_size = 3
height = 256
width = 256

KJUDGE_SMALL = {"batch_size": 2, "channels": 4, "height": 8, "width": 8}
KJUDGE_TAGS = ["conv", "conv2d", "depthwise"]


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [channels, kernel_size]
