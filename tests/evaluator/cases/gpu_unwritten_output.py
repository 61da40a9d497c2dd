# Never writes its output: with poisoned free memory, torch.empty's contents read back as NaN.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.empty_like(x)
