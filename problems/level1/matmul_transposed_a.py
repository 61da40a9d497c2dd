"""Matrix multiplication with a transposed left operand: C = A.T @ B, A given as (K, M)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix multiplication with a transposed left operand: C = A.T @ B, A given as (K, M)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A.T, B)


M = 2048
K = 4096
N = 2048

KJUDGE_SMALL = {"M": 8, "K": 16, "N": 12}
KJUDGE_TAGS = ["matmul", "transposed"]


def get_inputs():
    A = torch.randn(K, M)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
