# Correct: a kernelbench candidate that checks the dtype it is given.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        print("candidate dtype", x.dtype)
        return torch.where(x > 0, x, torch.zeros_like(x))
