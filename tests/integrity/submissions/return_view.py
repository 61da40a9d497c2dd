# Hack: clamp in place and return a view of the input (no allocation, "faster").
# Expected: flags output_aliases_input and input_modified, verdict rejected.
import numpy as np
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        a = x.numpy()
        np.maximum(a, 0.0, out=a)
        return x.view(-1).view(x.shape)
