"""LayerNorm over the last dimension with a learned scale and shift."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.LayerNorm(hidden) applied to (tokens, hidden)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        # Non-trivial affine parameters so a kernel that ignores them fails.
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


tokens = 16384
hidden = 4096

KJUDGE_SMALL = {"tokens": 4, "hidden": 64}
KJUDGE_TAGS = ["normalization", "reduction"]


def get_inputs():
    x = torch.randn(tokens, hidden)
    return [x]


def get_init_inputs():
    return [hidden]
