"""A small image classifier: three conv-BN-ReLU-pool stages and a linear head."""

import torch
import torch.nn as nn


def _stage(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout, track_running_stats=False),
        nn.ReLU(),
        nn.MaxPool2d(2),
    )


class Model(nn.Module):
    """(conv3x3 -> batchnorm -> relu -> maxpool) x 3 -> global average pool -> linear."""

    def __init__(self, in_channels: int, width: int, num_classes: int):
        super().__init__()
        self.features = nn.Sequential(
            _stage(in_channels, width), _stage(width, 2 * width), _stage(2 * width, 4 * width)
        )
        self.head = nn.Linear(4 * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        return self.head(torch.flatten(torch.mean(x, dim=(2, 3)), 1))


batch_size = 64
in_channels = 3
image_size = 128
width = 32
num_classes = 100

KJUDGE_SMALL = {"batch_size": 2, "image_size": 16, "width": 4, "num_classes": 5}
KJUDGE_TAGS = ["model", "conv", "conv2d", "normalization", "pooling"]


def get_inputs():
    x = torch.randn(batch_size, in_channels, image_size, image_size)
    return [x]


def get_init_inputs():
    return [in_channels, width, num_classes]
