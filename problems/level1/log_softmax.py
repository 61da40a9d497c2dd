"""LogSoftmax over the last dimension of a (batch, dim) fp32 tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies log-softmax along dim 1."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=1)


batch_size = 4096
dim = 16384

KJUDGE_SMALL = {"batch_size": 4, "dim": 64}
KJUDGE_TAGS = ["softmax", "reduction"]


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
