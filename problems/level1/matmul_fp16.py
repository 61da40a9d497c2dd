"""Half-precision square matrix multiplication C = A @ B."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Half-precision square matrix multiplication C = A @ B."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 8192

KJUDGE_SMALL = {"N": 16}
KJUDGE_TAGS = ["matmul", "fp16"]

# Inputs are scaled by 1/sqrt(N) so outputs are O(1); fp16 output rounding is ~1e-3 relative.
KJUDGE = {"atol": 1e-2, "rtol": 1e-2}


def get_inputs():
    A = torch.randn(N, N, dtype=torch.float16) / N**0.25
    B = torch.randn(N, N, dtype=torch.float16) / N**0.25
    return [A, B]


def get_init_inputs():
    return []
