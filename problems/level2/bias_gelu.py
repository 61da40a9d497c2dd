"""Bias add followed by GELU (the epilogue of an MLP's first projection)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """gelu(x + bias), bias broadcast over rows."""

    def __init__(self, hidden: int):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(hidden) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x + self.bias)


tokens = 16384
hidden = 4096

KJUDGE_SMALL = {"tokens": 4, "hidden": 64}
KJUDGE_TAGS = ["fused", "elementwise", "activation"]


def get_inputs():
    x = torch.randn(tokens, hidden)
    return [x]


def get_init_inputs():
    return [hidden]
