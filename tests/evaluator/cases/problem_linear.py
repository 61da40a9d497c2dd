# A problem with parameters: a raw-source entry receives x, then weight and bias (state_dict order).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, x):
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return [8]
