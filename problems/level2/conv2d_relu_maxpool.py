"""Conv2d, ReLU and 2x2 max pooling (a CNN stage)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """max_pool2d(relu(conv2d(x)), 2)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), kernel_size=2)


batch_size = 32
in_channels = 32
out_channels = 64
kernel_size = 3
height = 128
width = 128

KJUDGE_SMALL = {"batch_size": 2, "in_channels": 3, "out_channels": 4, "height": 8, "width": 8}
KJUDGE_TAGS = ["fused", "conv", "conv2d", "pooling", "activation"]


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
