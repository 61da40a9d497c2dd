"""`evaluator.api.prebuild`: the pipeline's compile stage builds into the cache `evaluate` reads,
decides compile errors on its own, and leaves languages that build inside their run alone."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.api import child_env, evaluate, prebuild
from evaluator.options import EvalOptions, Submission
from evaluator.problem import Problem
from evaluator.result import Backend, Language, Verdict

from .conftest import CASES, EXAMPLES

PROBLEM = Problem.from_file(EXAMPLES / "problem.py")
# Whichever test runs first in a session builds the precompiled header: minutes on a loaded host.
pytestmark = pytest.mark.timeout(900)


def _cpp(name: str, marker: str = "") -> Submission:
    # A distinct comment makes a distinct content hash: a build nobody made before in this session.
    source = (EXAMPLES / name).read_text() + f"\n// prebuild test {marker}\n"
    return Submission(source=source, language=Language.CPP)


def test_prebuild_fills_the_cache_that_evaluate_reads(cpu_options: EvalOptions) -> None:
    submission = _cpp("relu_cpp.cpp", "fills-cache")
    first = prebuild(PROBLEM, submission, cpu_options)
    assert first.result is None and first.built and not first.cached, first
    assert first.target.backend.value == "cpu"
    again = prebuild(PROBLEM, submission, cpu_options)
    assert again.built and again.cached

    result = evaluate(PROBLEM, submission, cpu_options)
    assert result.verdict == Verdict.CORRECT, result.message
    # The run did not compile: the build came from the cache the compile stage filled.
    assert result.durations_s["compile"] < first.durations_s["compile"] / 4


def test_a_compile_error_is_decided_without_a_run(cpu_options: EvalOptions) -> None:
    submission = _cpp("relu_compile_error.cpp", "compile-error")
    outcome = prebuild(PROBLEM, submission, cpu_options)
    assert outcome.result is not None and not outcome.built
    assert outcome.result.verdict == Verdict.COMPILE_ERROR
    assert outcome.result.logs.compile and outcome.result.timing is None
    reference = evaluate(PROBLEM, submission, cpu_options)
    assert (reference.verdict, reference.message) == (outcome.result.verdict, outcome.result.message)


def test_languages_that_build_in_their_run_are_handed_on(cpu_options: EvalOptions) -> None:
    source = (EXAMPLES / "relu_triton.py").read_text()
    outcome = prebuild(PROBLEM, Submission(source=source, language=Language.TRITON), cpu_options)
    assert outcome.result is None and not outcome.built


def test_a_precheck_failure_is_a_compile_error(cpu_options: EvalOptions) -> None:
    outcome = prebuild(PROBLEM, Submission(source="def broken(:\n", language=Language.TRITON), cpu_options)
    assert outcome.result is not None and outcome.result.verdict == Verdict.COMPILE_ERROR


def test_kernelbench_builds_ahead_in_a_sandbox_and_the_run_only_loads(cpu_options: EvalOptions) -> None:
    # A fresh C++ body (so a real build), through load_inline at import, as KernelBench writes it.
    source = (
        (CASES / "kb_load_inline_cpp.py")
        .read_text()
        .replace(
            "    auto in = x.contiguous();", "    auto in = x.contiguous();  // prebuild test variant", 1
        )
    )
    submission = Submission(source=source, language=Language.KERNELBENCH)
    modules = cpu_options.resolved_cache_dir() / "inline" / "modules"
    before = set(modules.glob("*")) if modules.exists() else set()
    outcome = prebuild(PROBLEM, submission, cpu_options)
    assert outcome.result is None and outcome.built, outcome.log
    assert "under the stand-in torch" in outcome.log, outcome.log  # no torch import in the child
    assert set(modules.glob("*")) - before  # the module is where the run's shim looks
    # Where the compile went: the ahead child's life, and inside it the lite build's steps.
    steps = outcome.durations_s
    assert 0 < steps["compile_lite_units"] < steps["compile_child"] <= steps["compile"], steps
    assert "compile_lite_link" in steps and "compile_units" not in steps, steps
    assert "did not take the lite torch API" not in outcome.log

    result = evaluate(PROBLEM, submission, cpu_options)
    assert result.verdict == Verdict.CORRECT, result.message
    assert result.durations_s["load"] < outcome.durations_s["compile"] / 3


def test_kernelbench_that_needs_a_device_at_import_is_left_to_its_run(cpu_options: EvalOptions) -> None:
    # The stand-in torch lets the import reach load_inline (the build is made ahead), but no
    # verdict is decided here: the run meets the device request and reports it.
    source = (
        "import torch\nx = torch.zeros(1, device='cuda')\n" + (CASES / "kb_load_inline_cpp.py").read_text()
    )
    submission = Submission(source=source, language=Language.KERNELBENCH)
    outcome = prebuild(PROBLEM, submission, cpu_options)
    assert outcome.result is None
    result = evaluate(PROBLEM, submission, cpu_options)
    assert result.verdict == Verdict.RUNTIME_ERROR and "cuda" in (result.message or "").lower(), (
        result.message
    )


def test_kernelbench_the_stand_in_torch_cannot_import_is_built_with_torch(cpu_options: EvalOptions) -> None:
    # A type check at import needs the real torch: the stand-in fails before load_inline, and the
    # child imports the candidate again with torch, building as before.
    source = (
        "import torch\nassert isinstance(torch.ones(1), torch.Tensor)\n"
        + (CASES / "kb_load_inline_cpp.py").read_text()
        + "\n# the stand-in fallback test\n"
    )
    outcome = prebuild(PROBLEM, Submission(source=source, language=Language.KERNELBENCH), cpu_options)
    assert outcome.result is None and outcome.built, outcome.log
    assert "the stand-in torch could not import the candidate" in outcome.log, outcome.log
    assert "under the stand-in torch" not in outcome.log
    assert "compile_torch_child" in outcome.durations_s  # the second child's time, said apart


def test_children_build_with_the_parents_compiler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The ahead child looks up the parent's precompiled header and lite runtimes under its own
    compiler's key: with CXX=c++ in the parent only, it found neither and built every KernelBench
    candidate with PyTorch's headers (26 s on the H100)."""
    from evaluator.build.toolchain import host_compiler

    cxx = shutil.which("c++") or shutil.which("g++")
    assert cxx is not None
    monkeypatch.setenv("CXX", Path(cxx).name)
    host_compiler.cache_clear()  # read once per process: an earlier test may have read it
    try:
        env = child_env(tmp_path, tmp_path, Backend.CUDA)
    finally:
        monkeypatch.undo()
        host_compiler.cache_clear()
    assert env["CXX"] == cxx
    code = "from evaluator.build.toolchain import host_compiler; print(host_compiler())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == cxx, out.stderr
