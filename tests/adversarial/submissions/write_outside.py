# Attack: write outside the scratch dir -- into kjudge's own source, the Python installation,
# system directories and the build cache. Expected: all fail (read-only); verdict `correct`.
import os
import sys

import numpy as np
import torch
import torch.nn as nn

import evaluator

targets = [os.path.join(evaluator.__path__[0], "pwned.py"), os.path.join(sys.prefix, "pwned"),
           os.path.join(os.path.dirname(torch.__file__), "pwned.py"), "/usr/lib/pwned", "/etc/pwned",
           "/pwned", "/root/pwned"]
cache = os.environ.get("TORCH_EXTENSIONS_DIR")
if cache:
    targets.append(os.path.join(cache, "pwned"))
wrote = []
for t in targets:
    try:
        with open(t, "w") as f:
            f.write("pwned")
        wrote.append(t)
    except OSError:
        pass
if wrote:
    raise RuntimeError(f"ATTACK SUCCEEDED: wrote {wrote}")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.from_numpy(np.maximum(x.numpy(), 0.0))
