"""ReLU on non-negative inputs: returning the input itself would be numerically correct, which is
what the aliasing checks are for. Small enough that an evaluation on the CPU takes a second."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.rand(256, 1024) - 0.25]


def get_init_inputs():
    return []
