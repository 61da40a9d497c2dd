# Hack (GPU): recompute only when the input changed (same buffer, same version counter means
# "the timer is calling again"): the integrity call checks see a correct, uncached kernel, the
# timing loop sees ~0 work. Expected: flag exceeds_roofline (or cached_output), verdict rejected.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.key = None
        self.out = None

    def forward(self, x):
        key = (x.data_ptr(), x._version, tuple(x.shape))
        if key != self.key:
            self.out = torch.where(x > 0, x, torch.zeros((), device=x.device))
            self.key = key
        return self.out
