"""Softmax in float16 over long rows (vocabulary-sized logits)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies softmax along the last dimension of an fp16 tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


batch_size = 4096
vocab = 32768

# Outputs are probabilities of order 1/vocab; fp16 rounding is ~1e-3 relative.
KJUDGE = {"atol": 1e-3, "rtol": 1e-2}
KJUDGE_SMALL = {"batch_size": 4, "vocab": 128}
KJUDGE_TAGS = ["softmax", "reduction", "fp16"]


def get_inputs():
    x = torch.randn(batch_size, vocab, dtype=torch.float16)
    return [x]


def get_init_inputs():
    return []
