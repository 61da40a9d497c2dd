# Writes the result into its input and returns a fresh copy: values right, inputs modified.
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        x.clamp_min_(0)
        return x.clone()
