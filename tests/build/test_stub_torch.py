"""The stand-in torch (evaluator/build/stub_torch.py) that the ahead-of-run build imports a
KernelBench candidate with: the import reaches load_inline with the candidate's own arguments,
and torch is never imported. In a fresh interpreter: this one has the real torch loaded."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.build._support import REPO

CANDIDATE = textwrap.dedent(
    """
    import math
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.cpp_extension import load_inline

    torch.manual_seed(0)
    SCALE = 2 * torch.pi if hasattr(torch, "pi") else math.pi
    x = torch.zeros(1, device="cuda")
    mod = load_inline("relu_ext", "torch::Tensor f(torch::Tensor x);", cuda_sources=["// cu"],
                      functions=["f"], extra_cuda_cflags=["-O3"], verbose=False)

    @torch.no_grad()
    def helper(t):
        return F.relu(t)

    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return mod.f(x)

    model = ModelNew()
    """
)

CHILD = textwrap.dedent(
    """
    import json, sys
    from evaluator.build import stub_torch
    calls = []
    def record(*args, **kwargs):
        calls.append({"args": list(args), "kwargs": kwargs})
        return stub_torch.Stub("module")
    outcome = {}
    with stub_torch.recording(record, record):
        exec(compile(sys.argv[1], "candidate", "exec"), {"__name__": "candidate"})
        try:
            import torch.utils.hipify.cuda_to_hip_mappings  # noqa: F401
            outcome["hipify"] = "imported"
        except ImportError as exc:
            outcome["hipify"] = str(exc)
    outcome["calls"] = calls
    outcome["torch_left"] = sorted(m for m in sys.modules if m.split(".")[0] == "torch")
    print(json.dumps(outcome))
    """
)


def test_a_candidate_imports_under_the_stand_in_and_its_build_is_recorded() -> None:
    run = subprocess.run([sys.executable, "-c", CHILD, CANDIDATE], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr
    outcome = json.loads(run.stdout.strip().splitlines()[-1])
    assert outcome["calls"] == [
        {
            "args": ["relu_ext", "torch::Tensor f(torch::Tensor x);"],
            "kwargs": {
                "cuda_sources": ["// cu"],
                "functions": ["f"],
                "extra_cuda_cflags": ["-O3"],
                "verbose": False,
            },
        }
    ]
    assert outcome["torch_left"] == []  # never the real torch, and nothing of the stand-in after
    assert outcome["hipify"] == "torch.utils.hipify needs the real torch"
