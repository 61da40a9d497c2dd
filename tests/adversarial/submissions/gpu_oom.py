# Device-side attack (GPU): allocate device memory until it runs out, and keep it.
# Expected: torch.OutOfMemoryError in the child, verdict `runtime_error`; the memory returns to
# the device when the child exits, so the next submission on the same GPU is `correct`.
import torch
import torch.nn as nn

hoard = []


class ModelNew(nn.Module):
    def forward(self, x):
        while True:
            hoard.append(torch.empty(1 << 30, dtype=torch.uint8, device=x.device))
