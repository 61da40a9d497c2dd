# The honest candidate run after every attack: its verdict must be `correct`.
import numpy as np
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        # A host "kernel" (numpy), not PyTorch's relu, so that no integrity flag applies.
        out = np.maximum(x.detach().cpu().numpy(), 0.0)
        return torch.from_numpy(out).to(x.device)
