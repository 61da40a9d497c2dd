"""ReLU in KernelBench's format (level 1, problem 19), at a size that runs in well under a second
on a CPU. The benchmark (bench/eval_latency.py) uses KernelBench's own size separately."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Simple model that performs a ReLU activation."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 16
dim = 16384


def get_inputs():
    # Centered on zero so that about half of the elements are negative.
    x = torch.rand(batch_size, dim) * 2 - 1
    return [x]


def get_init_inputs():
    return []
