# Hack: correct output, but the input is scribbled on (reused as scratch space).
# Expected: flag input_modified, verdict rejected.
import numpy as np
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.from_numpy(np.maximum(x.numpy(), 0.0))
        x.numpy()[:] = 0.0
        return out
