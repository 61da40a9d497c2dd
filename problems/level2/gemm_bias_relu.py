"""Linear layer (GEMM + bias) followed by ReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x @ W.T + b)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


batch_size = 2048
in_features = 4096
out_features = 4096

KJUDGE_SMALL = {"batch_size": 4, "in_features": 16, "out_features": 8}
KJUDGE_TAGS = ["fused", "matmul", "activation"]


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
