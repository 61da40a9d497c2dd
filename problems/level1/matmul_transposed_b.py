"""Matrix multiplication with a transposed right operand: C = A @ B.T, B given as (N, K)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix multiplication with a transposed right operand: C = A @ B.T, B given as (N, K)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


M = 2048
K = 4096
N = 2048

KJUDGE_SMALL = {"M": 8, "K": 16, "N": 12}
KJUDGE_TAGS = ["matmul", "transposed"]


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(N, K)
    return [A, B]


def get_init_inputs():
    return []
