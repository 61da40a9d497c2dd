"""Max over the middle dimension of a 3-D tensor (values only)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Takes the maximum over dimension `dim`."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x, dim=self.dim)[0]


batch_size = 64
dim1 = 2048
dim2 = 1024
reduce_dim = 1

KJUDGE_SMALL = {"batch_size": 2, "dim1": 16, "dim2": 8}
KJUDGE_TAGS = ["reduction"]


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
