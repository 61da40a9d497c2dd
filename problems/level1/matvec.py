"""Matrix-vector product: (M, K) @ (K, 1) (memory bound)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix-vector product: (M, K) @ (K, 1) (memory bound)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 8192
K = 16384

KJUDGE_SMALL = {"M": 8, "K": 32}
KJUDGE_TAGS = ["matmul", "matvec"]


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, 1)
    return [A, B]


def get_init_inputs():
    return []
