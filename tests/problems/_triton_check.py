"""Runs every Triton reference kernel against its problem at KJUDGE_SMALL sizes on the CPU.

Run as a script with TRITON_INTERPRET=1 set before Triton is imported (the pytest wrapper
tests/problems/test_reference_kernels.py does that in a child process). Prints one JSON line per
kernel: {"problem", "ok", "max_abs_err", "error"}.
"""

from __future__ import annotations

import importlib.util
import json
import sys

import torch

from problems.catalog import get_builtin, iter_builtin_problems
from problems.loader import load_namespace


def check(name: str) -> dict[str, object]:
    problem = get_builtin(name)
    ns = load_namespace(problem.source, name, small=True)
    spec = importlib.util.spec_from_file_location(f"triton_{name}", problem.kernels["triton"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    init = ns["get_init_inputs"]()
    torch.manual_seed(1)
    reference = ns["Model"](*init)
    torch.manual_seed(1)
    candidate = module.ModelNew(*init)
    worst = 0.0
    for trial in range(2):
        torch.manual_seed(100 + trial)
        inputs = ns["get_inputs"]()
        with torch.no_grad():
            expected = reference(*inputs)
            got = candidate(*[t.clone() for t in inputs])
        if got.shape != expected.shape or got.dtype != expected.dtype:
            return {"problem": name, "ok": False, "error": f"shape/dtype {got.shape} {got.dtype}"}
        worst = max(worst, float((got - expected).abs().max()))
        if not torch.allclose(got, expected, atol=1e-4, rtol=1e-4):
            return {"problem": name, "ok": False, "max_abs_err": worst, "error": "mismatch"}
    return {"problem": name, "ok": True, "max_abs_err": worst}


def main(names: list[str]) -> int:
    names = names or [p.name for p in iter_builtin_problems() if "triton" in p.kernels]
    for name in names:
        try:
            result = check(name)
        except Exception as exc:  # report and go on: one broken kernel must not hide the others
            result = {"problem": name, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
