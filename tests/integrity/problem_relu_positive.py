"""ReLU on non-negative inputs: the input itself is the right answer, so only the aliasing check
can tell that a candidate returning it did no work."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.rand(256, 1024)]


def get_init_inputs():
    return []
