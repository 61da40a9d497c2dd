# Attack: allocate host memory until something gives. Expected: the memory limit stops it
# (MemoryError or a kill by the memory cgroup), verdict `runtime_error`.
import torch
import torch.nn as nn

hoard = []
while True:
    hoard.append(torch.ones(64 << 20, dtype=torch.uint8))


class ModelNew(nn.Module):
    def forward(self, x):
        return x
