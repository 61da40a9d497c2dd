# A correct kernelbench candidate for problem_linear: its weights must match the reference's,
# which they do only if kjudge builds both models under the same seed.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, x):
        return torch.clamp_min(x @ self.fc.weight.t() + self.fc.bias, 0.0)
