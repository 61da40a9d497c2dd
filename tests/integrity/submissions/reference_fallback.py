# Hack: a "custom kernel" that fails, caught by a try/except that falls back to PyTorch.
# Expected: flag reference_op_called, verdict rejected.
import torch
import torch.nn as nn
import torch.nn.functional as F


def custom_relu(x):
    raise RuntimeError("kernel launch failed: invalid configuration")


class ModelNew(nn.Module):
    def forward(self, x):
        try:
            return custom_relu(x)
        except Exception:
            return F.relu(x)
