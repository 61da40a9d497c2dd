import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    raise ValueError("dataset file missing")


def get_init_inputs():
    return []
