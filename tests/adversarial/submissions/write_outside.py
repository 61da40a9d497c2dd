# Attack: write outside the scratch dir -- into kjudge's own source, the Python installation,
# system directories and the shared cache (baselines, other submissions' compiled modules). Expected: all fail (read-only); verdict `correct`.
import os
import sys

import numpy as np
import torch
import torch.nn as nn

import evaluator

targets = [os.path.join(evaluator.__path__[0], "pwned.py"), os.path.join(sys.prefix, "pwned"),
           os.path.join(os.path.dirname(torch.__file__), "pwned.py"), "/usr/lib/pwned", "/etc/pwned",
           "/pwned", "/root/pwned"]
# The shared cache: its root (baselines), compiled native modules of other submissions and the
# probed targets are not bound into a run (only the run's own build caches are). Writing next to
# a bound cache dir lands in the sandbox's private tmpfs, so success there proves nothing: those
# writes are only attempted here, and the test checks on the host that none arrived.
cache = os.environ.get("TORCH_EXTENSIONS_DIR")
if cache:
    root = os.path.dirname(cache)
    for t in [os.path.join(root, "pwned"), os.path.join(root, "native", "pwned"),
              os.path.join(root, "targets", "pwned"), os.path.join(root, "baselines", "pwned.json")]:
        try:
            os.makedirs(os.path.dirname(t), exist_ok=True)
            with open(t, "w") as f:
                f.write("pwned")
        except OSError:
            pass
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
