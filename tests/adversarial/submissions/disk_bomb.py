# Attack: fill the disk from the scratch dir. Expected: killed by the disk limit (or the
# file-size limit), verdict `runtime_error`; the scratch dir is removed afterwards.
import torch.nn as nn

block = b"\0" * (1 << 20)
with open("fill.bin", "wb") as f:
    while True:
        f.write(block)


class ModelNew(nn.Module):
    def forward(self, x):
        return x
