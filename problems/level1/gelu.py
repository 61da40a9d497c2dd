"""GELU (exact, erf form) over a large fp32 tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies the exact GELU elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x)


batch_size = 4096
dim = 16384

KJUDGE_SMALL = {"batch_size": 4, "dim": 64}
KJUDGE_TAGS = ["elementwise", "activation"]


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
