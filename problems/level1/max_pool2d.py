"""2x2 max pooling with stride 2."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.MaxPool2d(kernel_size, stride)."""

    def __init__(self, kernel_size: int, stride: int):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 32
channels = 64
height = 256
width = 256
kernel_size = 2
stride = 2

KJUDGE_SMALL = {"batch_size": 2, "channels": 3, "height": 8, "width": 8}
KJUDGE_TAGS = ["pooling"]


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size, stride]
