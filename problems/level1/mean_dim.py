"""Mean over the last dimension of a 3-D tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Averages over dimension `dim`, dropping it."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=self.dim)


batch_size = 64
dim1 = 1024
dim2 = 2048
reduce_dim = 2

KJUDGE_SMALL = {"batch_size": 2, "dim1": 8, "dim2": 16}
KJUDGE_TAGS = ["reduction"]


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
