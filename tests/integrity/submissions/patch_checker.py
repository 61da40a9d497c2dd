# Hack: patch kjudge's own checker -- every function in evaluator.* modules that looks like a
# comparison returns "all good" -- then return garbage. Expected: flag monkey_patched, verdict
# rejected.
import sys

import torch
import torch.nn as nn

for name, module in list(sys.modules.items()):
    if not name.startswith("evaluator") or module is None:
        continue
    for attr, value in list(vars(module).items()):
        if callable(value) and any(w in attr.lower() for w in ("compare", "close", "check", "correct", "allclose")):
            try:
                setattr(module, attr, lambda *a, **k: True)
            except (AttributeError, TypeError):
                pass


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)
