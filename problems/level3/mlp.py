"""A three-layer MLP with ReLU activations."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear -> ReLU -> Linear -> ReLU -> Linear."""

    def __init__(self, in_features: int, hidden: int, out_features: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, out_features),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


batch_size = 1024
in_features = 4096
hidden = 4096
out_features = 1024

KJUDGE_SMALL = {"batch_size": 4, "in_features": 16, "hidden": 32, "out_features": 8}
KJUDGE_TAGS = ["model", "matmul", "activation"]


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, hidden, out_features]
