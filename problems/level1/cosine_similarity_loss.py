"""Cosine-similarity loss: mean over rows of 1 - cos(predictions_i, targets_i)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """mean(1 - cosine_similarity(predictions, targets, dim=1))."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        cosine = torch.nn.functional.cosine_similarity(predictions, targets, dim=1)
        return torch.mean(1 - cosine)


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
