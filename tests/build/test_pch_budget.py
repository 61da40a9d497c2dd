"""The shared precompiled header (and the lite runtime) is kjudge's own work: however long its first build takes on a
loaded host, the candidate's compile keeps its whole budget (it got 1 s, a false compile_error)."""

from __future__ import annotations

import time
from pathlib import Path

from evaluator.build import native
from evaluator.build.models import BuildOutput
from evaluator.result import Language, Target

SOURCE = "#include <torch/extension.h>\ntorch::Tensor forward(torch::Tensor x) { return x; }\n"


def test_a_slow_header_build_leaves_the_candidate_its_budget(
    monkeypatch, tmp_path: Path, cpu_target: Target
) -> None:
    budgets: list[float] = []

    def slow_header(*_args, **_kwargs):
        time.sleep(1.5)  # the header's build: kjudge's time, not the candidate's
        return tmp_path, "built precompiled torch/extension.h\n"

    def slow_runtime(*_args, **_kwargs):
        time.sleep(1.0)  # the lite runtime's build: kjudge's time too
        return tmp_path, "built the lite runtime for cpu\n"

    def compile_sandboxed(_spec, _cache_dir, _pch_dir, _lite_dir, budget: float, _jobs) -> BuildOutput:
        budgets.append(budget)
        return BuildOutput(ok=False, message="stop here")

    monkeypatch.setattr(native, "needs_pch", lambda _spec: True)
    monkeypatch.setattr(native, "ensure_pch", slow_header)
    monkeypatch.setattr(native.lite, "ensure_runtime", slow_runtime)
    monkeypatch.setattr(native, "_compile_sandboxed", compile_sandboxed)
    native.build_native(SOURCE, Language.CPP, "forward", cpu_target, tmp_path / "cache", timeout_s=10.0)
    # Was 10 - 1.5: the header's time came off the budget (and the lite runtime's would have).
    assert budgets and budgets[0] > 9.5, budgets
