"""Batched matrix multiplication: (batch, M, K) @ (batch, K, N)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Batched matrix multiplication: (batch, M, K) @ (batch, K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


batch_size = 128
M = 512
K = 1024
N = 512

KJUDGE_SMALL = {"batch_size": 2, "M": 8, "K": 16, "N": 12}
KJUDGE_TAGS = ["matmul", "batched"]


def get_inputs():
    A = torch.randn(batch_size, M, K)
    B = torch.randn(batch_size, K, N)
    return [A, B]


def get_init_inputs():
    return []
