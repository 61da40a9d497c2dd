"""Rectangular matrix multiplication C = A @ B with A (M, K), B (K, N)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Rectangular matrix multiplication C = A @ B with A (M, K), B (K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 2048
K = 4096
N = 2048

KJUDGE_SMALL = {"M": 8, "K": 16, "N": 12}
KJUDGE_TAGS = ["matmul"]


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
