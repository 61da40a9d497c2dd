# Scaled, causally masked softmax (problems/level2/causal_masked_softmax.py) in Triton, fused:
# row r of the (batch, heads, seq, seq) scores is query r % seq; later keys are never read.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def causal_softmax_kernel(x_ptr, y_ptr, seq, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    last = row % seq
    offsets = tl.arange(0, BLOCK)
    visible = offsets <= last
    x = tl.load(x_ptr + row * seq + offsets, mask=visible, other=-float("inf")) * scale
    x = x - tl.max(x, axis=0)
    e = tl.where(visible, tl.exp(x), 0.0)
    tl.store(y_ptr + row * seq + offsets, e / tl.sum(e, axis=0), mask=offsets < seq)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        scores = scores.contiguous()
        out = torch.empty_like(scores)
        seq = scores.shape[-1]
        block = triton.next_power_of_2(seq)
        causal_softmax_kernel[(scores.numel() // seq,)](scores, out, seq, self.scale, BLOCK=block, num_warps=4)
        return out
