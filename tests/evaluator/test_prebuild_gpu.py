"""`prebuild` on a GPU host: the compile stage builds CUDA, HIP-on-CUDA and KernelBench load_inline
candidates without touching the device, and the run that follows only loads them."""

from __future__ import annotations

import pytest

from evaluator.api import evaluate, prebuild
from evaluator.options import EvalOptions, Submission
from evaluator.problem import Problem
from evaluator.result import Language, Verdict
from tests.evaluator.conftest import EXAMPLES

pytestmark = pytest.mark.gpu

RELU = Problem.from_file(EXAMPLES / "problem.py")


@pytest.mark.parametrize(
    ("name", "language", "variant"),
    [
        (
            "relu_cuda.cu",
            Language.CUDA,
            "\nnamespace { [[maybe_unused]] constexpr int kjudge_prebuild_gpu = 1; }\n",
        ),
        (
            "relu_hip.hip",
            Language.HIP,
            "\nnamespace { [[maybe_unused]] constexpr int kjudge_prebuild_gpu = 2; }\n",
        ),
        ("relu_kernelbench.py", Language.KERNELBENCH, None),
    ],
)
def test_prebuilt_candidates_run_without_compiling(
    gpu_options: EvalOptions, name: str, language: Language, variant: str | None
) -> None:
    source = (EXAMPLES / name).read_text()
    if variant is not None:
        source += variant
    else:  # a new CUDA body inside the load_inline string
        source = source.replace("if (idx < size) {", "if (idx < size) {  // prebuild gpu test", 1)
    submission = Submission(source=source, language=language)
    outcome = prebuild(RELU, submission, gpu_options)
    assert outcome.result is None and outcome.built, outcome.log
    result = evaluate(RELU, submission, gpu_options)
    assert result.verdict == Verdict.CORRECT, result.message
    spent = result.durations_s.get("compile", 0.0) + result.durations_s.get("load", 0.0)
    assert spent < outcome.durations_s["compile"] / 3, (result.durations_s, outcome.durations_s)


def test_a_triton_candidate_runs_on_the_kernel_compiled_ahead(gpu_options: EvalOptions) -> None:
    """The compile stage's Triton child (no device) writes the kernel its run's JIT then finds:
    the run adds no entry to the Triton cache (a key that did not match would compile anew)."""
    import time

    source = (EXAMPLES / "relu_triton.py").read_text()
    source = source.replace(
        "    mask = offsets < n\n", f"    mask = offsets < n\n    kjudge_variant = {time.time_ns()}\n", 1
    )
    submission = Submission(source=source, language=Language.TRITON)
    triton_cache = gpu_options.resolved_cache_dir() / "triton"
    outcome = prebuild(RELU, submission, gpu_options)
    assert outcome.result is None and "compiled 1 Triton launch(es) ahead" in outcome.log, outcome.log
    assert "left to the run" not in outcome.log, outcome.log
    compiled = {p.parent.name for p in triton_cache.rglob("*.cubin")}
    result = evaluate(RELU, submission, gpu_options)
    assert result.verdict == Verdict.CORRECT, result.message
    assert {p.parent.name for p in triton_cache.rglob("*.cubin")} == compiled
