"""GEMM, sigmoid, then a row sum (a reduction fused after a matmul)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """sum(sigmoid(linear(x)), dim=1, keepdim=True)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.linear(x)).sum(dim=1, keepdim=True)


batch_size = 2048
in_features = 4096
out_features = 4096

KJUDGE_SMALL = {"batch_size": 4, "in_features": 16, "out_features": 8}
KJUDGE_TAGS = ["fused", "matmul", "reduction"]


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
