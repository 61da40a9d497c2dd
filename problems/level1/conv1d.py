"""1-D convolution, stride 1, no padding, with bias."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Conv1d(in_channels, out_channels, kernel_size)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 32
in_channels = 64
out_channels = 128
kernel_size = 3
length = 8192

KJUDGE_SMALL = {"batch_size": 2, "in_channels": 3, "out_channels": 4, "length": 16}
KJUDGE_TAGS = ["conv", "conv1d"]


def get_inputs():
    x = torch.randn(batch_size, in_channels, length)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
