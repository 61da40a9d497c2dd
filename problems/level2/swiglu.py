"""SwiGLU gate: silu(first half) * second half of the last dimension."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """a, b = x.chunk(2, dim=-1); silu(a) * b."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = x.chunk(2, dim=-1)
        return torch.nn.functional.silu(a) * b


tokens = 8192
hidden = 8192

KJUDGE_SMALL = {"tokens": 4, "hidden": 32}
KJUDGE_TAGS = ["fused", "elementwise", "activation"]


def get_inputs():
    x = torch.randn(tokens, 2 * hidden)
    return [x]


def get_init_inputs():
    return []
