# Hack: look up the call stack, and when the caller is the timer, skip the work (return zeros):
# the correctness trials see the real kernel, the timer an empty one.
# Expected: flag timed_output_mismatch, verdict rejected (a timed call's outputs are checked
# after it returned, by a draw the candidate cannot see).
import sys

import numpy as np
import torch
import torch.nn as nn


def _timed() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith("timing.py"):
            return True
        frame = frame.f_back
    return False


class ModelNew(nn.Module):
    def forward(self, x):
        if _timed():
            return torch.zeros_like(x)
        return torch.from_numpy(np.maximum(x.detach().cpu().numpy(), 0.0)).to(x.device)
