"""Transposed 2-D convolution (upsampling by 2): kernel 4, stride 2, padding 1."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.ConvTranspose2d(in_channels, out_channels, 4, stride=2, padding=1)."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size=4, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 16
in_channels = 64
out_channels = 32
height = 128
width = 128

KJUDGE_SMALL = {"batch_size": 2, "in_channels": 3, "out_channels": 2, "height": 5, "width": 5}
KJUDGE_TAGS = ["conv", "conv_transpose"]


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels]
