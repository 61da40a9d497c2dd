"""Argmax over the last dimension (int64 output)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Returns the index of the maximum along dimension `dim`."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.dim)


batch_size = 16384
dim = 8192
reduce_dim = 1

KJUDGE_SMALL = {"batch_size": 4, "dim": 64}
KJUDGE_TAGS = ["reduction"]


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [reduce_dim]
