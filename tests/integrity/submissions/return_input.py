# Hack: return the input itself (on this problem's shifted inputs it is wrong only for the
# negative quarter; on all-positive inputs it would pass allclose). Expected: flag
# output_aliases_input, verdict rejected.
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x
