"""Scaled, causally masked softmax over attention scores (scale, mask, softmax)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """softmax(masked_fill(scores * scale, j > i, -inf), dim=-1) on (batch, heads, seq, seq)."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        seq = scores.shape[-1]
        mask = torch.triu(torch.ones(seq, seq, dtype=torch.bool, device=scores.device), diagonal=1)
        scores = (scores * self.scale).masked_fill(mask, float("-inf"))
        return torch.softmax(scores, dim=-1)


batch_size = 8
num_heads = 16
seq_len = 1024
scale = 0.125
# The output depends only on the lower triangle (diagonal included) of the scores: a kernel need
# not read the rest, so the roofline counts half of the input.
KJUDGE = {"input_read_fraction": 0.5}

KJUDGE_SMALL = {"batch_size": 1, "num_heads": 2, "seq_len": 16}
KJUDGE_TAGS = ["fused", "softmax", "attention"]


def get_inputs():
    scores = torch.randn(batch_size, num_heads, seq_len, seq_len)
    return [scores]


def get_init_inputs():
    return [scale]
