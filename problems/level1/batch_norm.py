"""BatchNorm2d in training mode (normalises with the batch statistics)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Per-channel normalisation with the batch's statistics, then a learned scale and shift."""

    def __init__(self, channels: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(channels).uniform_(0.5, 1.5))
        self.bias = nn.Parameter(torch.empty(channels).uniform_(-0.5, 0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # training=True: batch statistics whatever mode the judge puts the module in, and no
        # running-stat buffers that would change between calls.
        return torch.nn.functional.batch_norm(
            x, None, None, self.weight, self.bias, training=True, eps=self.eps
        )


batch_size = 32
channels = 64
height = 256
width = 256

KJUDGE_SMALL = {"batch_size": 2, "channels": 4, "height": 4, "width": 4}
KJUDGE_TAGS = ["normalization", "reduction"]


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [channels]
