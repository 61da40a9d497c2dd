"""A ResNet basic block: two conv-BN stages with an identity shortcut."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(bn2(conv2(relu(bn1(conv1(x))))) + x)."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels, track_running_stats=False)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels, track_running_stats=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + x)


batch_size = 32
channels = 64
height = 112
width = 112

KJUDGE_SMALL = {"batch_size": 2, "channels": 4, "height": 8, "width": 8}
KJUDGE_TAGS = ["model", "conv", "conv2d", "normalization"]


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [channels]
