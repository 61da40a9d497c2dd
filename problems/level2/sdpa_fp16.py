"""Causal scaled dot-product attention in float16 (the core of an attention block)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """softmax(q k^T / sqrt(d) + causal mask) v, per batch and head."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


batch_size = 16
num_heads = 16
seq_len = 1024
head_dim = 64

# fp16 inputs; flash/efficient kernels accumulate in fp32 but round p and the output to fp16.
KJUDGE = {"atol": 1e-2, "rtol": 1e-2}
KJUDGE_SMALL = {"batch_size": 1, "num_heads": 2, "seq_len": 8, "head_dim": 8}
KJUDGE_TAGS = ["fused", "attention", "matmul", "softmax", "fp16"]


def get_inputs():
    shape = (batch_size, num_heads, seq_len, head_dim)
    q = torch.randn(shape, dtype=torch.float16)
    k = torch.randn(shape, dtype=torch.float16)
    v = torch.randn(shape, dtype=torch.float16)
    return [q, k, v]


def get_init_inputs():
    return []
