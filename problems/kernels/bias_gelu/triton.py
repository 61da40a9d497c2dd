# Bias add + exact GELU (problems/level2/bias_gelu.py) in Triton: one read, one write per element.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_gelu_kernel(x_ptr, b_ptr, y_ptr, n, hidden, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    h = tl.load(x_ptr + offsets, mask=mask, other=0.0) + tl.load(b_ptr + offsets % hidden, mask=mask, other=0.0)
    y = 0.5 * h * (1.0 + tl.erf(h * 0.7071067811865476))
    tl.store(y_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(hidden) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 4096
        bias_gelu_kernel[(triton.cdiv(n, block),)](x, self.bias, y, n, x.shape[-1], BLOCK=block, num_warps=8)
        return y
