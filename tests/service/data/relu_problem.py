"""ReLU on a small fp32 tensor: small enough for Triton's CPU interpreter in service tests."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(8, 256)]


def get_init_inputs():
    return []
