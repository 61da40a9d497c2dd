"""Conv2d, batch normalisation (batch statistics) and ReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(batch_norm(conv2d(x))), batch statistics as in training."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bn_weight = nn.Parameter(torch.empty(out_channels).uniform_(0.5, 1.5))
        self.bn_bias = nn.Parameter(torch.empty(out_channels).uniform_(-0.5, 0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        # training=True: no running-stat buffers, same output in train and eval mode.
        x = torch.nn.functional.batch_norm(x, None, None, self.bn_weight, self.bn_bias, training=True)
        return torch.relu(x)


batch_size = 32
in_channels = 32
out_channels = 64
kernel_size = 3
height = 128
width = 128

KJUDGE_SMALL = {"batch_size": 2, "in_channels": 3, "out_channels": 4, "height": 8, "width": 8}
KJUDGE_TAGS = ["fused", "conv", "conv2d", "normalization", "activation"]


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
