# Attack: sleep past the deadline inside forward (after passing import). Expected: the wall
# clock kills the whole sandbox, verdict `timeout`.
import time

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        time.sleep(3600)
        return x
