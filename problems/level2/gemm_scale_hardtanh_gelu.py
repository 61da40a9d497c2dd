"""GEMM, scaling, HardTanh and GELU in sequence."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """gelu(hardtanh(linear(x) * scale, -2, 2))."""

    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x) * self.scale
        x = torch.nn.functional.hardtanh(x, min_val=-2.0, max_val=2.0)
        return torch.nn.functional.gelu(x)


batch_size = 2048
in_features = 4096
out_features = 4096
scale = 0.5

KJUDGE_SMALL = {"batch_size": 4, "in_features": 16, "out_features": 8}
KJUDGE_TAGS = ["fused", "matmul", "activation"]


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, scale]
