"""Square matrix multiplication C = A @ B (fp32)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Square matrix multiplication C = A @ B (fp32)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 4096

KJUDGE_SMALL = {"N": 16}
KJUDGE_TAGS = ["matmul"]


def get_inputs():
    A = torch.randn(N, N)
    B = torch.randn(N, N)
    return [A, B]


def get_init_inputs():
    return []
