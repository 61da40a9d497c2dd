"""LeakyReLU with a configurable negative slope."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies LeakyReLU elementwise with the slope given at construction."""

    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 4096
dim = 16384
negative_slope = 0.05

KJUDGE_SMALL = {"batch_size": 4, "dim": 64}
KJUDGE_TAGS = ["elementwise", "activation"]


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [negative_slope]
