"""Cross-entropy loss over class logits (mean over the batch)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.nn.functional.cross_entropy(predictions, targets)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(predictions, targets)


batch_size = 16384
num_classes = 4096

KJUDGE_SMALL = {"batch_size": 4, "num_classes": 10}
KJUDGE_TAGS = ["loss", "reduction", "softmax"]


def get_inputs():
    predictions = torch.randn(batch_size, num_classes)
    targets = torch.randint(0, num_classes, (batch_size,))
    return [predictions, targets]


def get_init_inputs():
    return []
