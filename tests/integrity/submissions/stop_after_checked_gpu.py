# Hack (GPU): a real kernel for the first calls (correctness trials, integrity checks), then an
# uninitialized output at once: the timed calls would report the cost of an allocation.
# Expected: flag timed_output_mismatch, verdict rejected.
import torch
import torch.nn as nn

HONEST_CALLS = 15


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > HONEST_CALLS:
            return torch.empty_like(x)
        return torch.where(x > 0, x, torch.zeros((), device=x.device))
