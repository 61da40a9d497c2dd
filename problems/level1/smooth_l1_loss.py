"""Smooth L1 (Huber, beta = 1) loss, mean over all elements."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.nn.functional.smooth_l1_loss(predictions, targets)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.smooth_l1_loss(predictions, targets)


batch_size = 4096
dim = 16384

KJUDGE_SMALL = {"batch_size": 4, "dim": 64}
KJUDGE_TAGS = ["loss", "reduction"]


def get_inputs():
    predictions = torch.randn(batch_size, dim)
    targets = torch.randn(batch_size, dim)
    return [predictions, targets]


def get_init_inputs():
    return []
