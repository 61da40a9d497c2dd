"""Tanh-approximate GELU in bfloat16 (the form used in GPT-style MLPs)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies GELU (tanh approximation) elementwise to a bf16 tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x, approximate="tanh")


batch_size = 8192
dim = 16384

# bf16 keeps 8 bits of mantissa: 2^-8 ~ 4e-3 relative per rounding.
KJUDGE = {"atol": 2e-2, "rtol": 2e-2}
KJUDGE_SMALL = {"batch_size": 4, "dim": 64}
KJUDGE_TAGS = ["elementwise", "activation", "bf16"]


def get_inputs():
    x = torch.randn(batch_size, dim, dtype=torch.bfloat16)
    return [x]


def get_init_inputs():
    return []
