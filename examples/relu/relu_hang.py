# Hangs on purpose: forward never returns. Expected verdict: timeout.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while True:
            pass
