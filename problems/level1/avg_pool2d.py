"""3x3 average pooling, stride 1, padding 1 (a box blur; output has the input's size)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.AvgPool2d(3, stride=1, padding=1); padded cells count towards the average."""

    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=3, stride=1, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 32
channels = 64
height = 256
width = 256

KJUDGE_SMALL = {"batch_size": 2, "channels": 3, "height": 8, "width": 8}
KJUDGE_TAGS = ["pooling"]


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return []
