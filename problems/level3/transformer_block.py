"""A pre-LayerNorm transformer decoder block: causal self-attention and a GELU MLP."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x + attn(ln1(x)), then + mlp(ln2(.)); attention is causal multi-head."""

    def __init__(self, d_model: int, num_heads: int, mlp_ratio: int):
        super().__init__()
        self.num_heads = num_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, mlp_ratio * d_model)
        self.fc2 = nn.Linear(mlp_ratio * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.num_heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q = q.view(b, t, h, d // h).transpose(1, 2)
        k = k.view(b, t, h, d // h).transpose(1, 2)
        v = v.view(b, t, h, d // h).transpose(1, 2)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


batch_size = 8
seq_len = 512
d_model = 1024
num_heads = 16
mlp_ratio = 4

KJUDGE_SMALL = {"batch_size": 2, "seq_len": 8, "d_model": 16, "num_heads": 2, "mlp_ratio": 2}
KJUDGE_TAGS = ["model", "attention", "matmul", "normalization"]


def get_inputs():
    x = torch.randn(batch_size, seq_len, d_model)
    return [x]


def get_init_inputs():
    return [d_model, num_heads, mlp_ratio]
