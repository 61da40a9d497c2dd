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
from evaluator.result import Backend, Language, Target, Verdict

from .conftest import CASES, EXAMPLES

PROBLEM = Problem.from_file(EXAMPLES / "problem.py")
REPO = Path(__file__).resolve().parents[2]
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


def test_triton_kernels_are_compiled_ahead_for_an_nvidia_target(cpu_options: EvalOptions) -> None:
    """No GPU here: the ahead child compiles the candidate's kernel for sm_90 into the Triton
    cache its run reads (TRITON_CACHE_DIR), from the problem's inputs on the meta device."""
    from evaluator.build.triton_ahead import capability
    from problems.catalog import get_builtin

    assert (capability("sm_90"), capability("sm_90a"), capability("gfx942"), capability("x86_64")) == (
        90,
        90,
        None,
        None,
    )
    softmax = Problem.from_source(get_builtin("softmax").source, name="softmax")
    sm90 = Target(backend=Backend.CUDA, arch="sm_90", device="NVIDIA H100 80GB HBM3")
    kernel = (REPO / "problems" / "kernels" / "softmax" / "triton.py").read_text()
    source = kernel.replace("row = tl.program_id(0)", "row = tl.program_id(0)  # ahead test", 1)
    triton_cache = cpu_options.resolved_cache_dir() / "triton"
    before = set(triton_cache.rglob("*.cubin"))
    outcome = prebuild(softmax, Submission(source=source, language=Language.TRITON), cpu_options, target=sm90)
    assert outcome.result is None and "compiled 1 Triton launch(es) ahead for sm_90" in outcome.log, (
        outcome.log
    )
    # (with the host's one-time check's kernel beside it, when this test is the first to ask)
    assert "softmax_kernel.cubin" in {p.name for p in set(triton_cache.rglob("*.cubin")) - before}
    assert 0 < outcome.durations_s["compile_child"] <= outcome.durations_s["compile"]

    # One that needs the device itself: nothing decided here, its run compiles (and judges) it.
    needs_gpu = source.replace("y = torch.empty_like(x)", "y = torch.empty_like(x, device='cuda')", 1)
    outcome = prebuild(
        softmax, Submission(source=needs_gpu, language=Language.TRITON), cpu_options, target=sm90
    )
    assert outcome.result is None and "left to the run's JIT" in outcome.log, outcome.log


def test_a_host_whose_triton_fails_the_check_leaves_triton_to_the_run(
    cpu_options: EvalOptions, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Triton whose JIT cannot be driven ahead (its internals change between releases) costs
    Triton candidates no child that compiles nothing: they go to their run as before."""
    from evaluator import triton_prebuild

    monkeypatch.setattr(triton_prebuild, "_CHECKED", {})
    monkeypatch.setattr(triton_prebuild, "_check", lambda *args: False)
    sm90 = Target(backend=Backend.CUDA, arch="sm_90", device="NVIDIA H100 80GB HBM3")
    source = (REPO / "problems" / "kernels" / "relu" / "triton.py").read_text()
    outcome = prebuild(PROBLEM, Submission(source=source, language=Language.TRITON), cpu_options, target=sm90)
    assert outcome.result is None and outcome.durations_s == {"compile": 0.0} and "Triton" not in outcome.log
