import kjudge_no_such_module  # noqa: F401
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.relu()
