"""The cpu target end to end through `evaluate`, timed: a correct candidate gets a timing, a
baseline and a speedup, and the baseline it measured is cached for the next evaluation.

These run in the quiet lane (tests/lanes.py): a CPU baseline timed beside other work is
`contended` and never cached, so the cached-baseline check needs an otherwise idle host. Every
other verdict of the cpu target is test_eval_cpu_verdicts.py's, which runs beside other work."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator import baselines
from evaluator.api import evaluate
from evaluator.options import EvalOptions, Submission
from evaluator.problem import Problem
from evaluator.result import Result, Status, Verdict
from tests.evaluator.conftest import EXAMPLES

RELU = Problem.from_file(EXAMPLES / "problem.py")


def run(options: EvalOptions, kernel: Path | str, problem: Problem = RELU, **kw: object) -> Result:
    sub = Submission.from_file(kernel, **kw) if isinstance(kernel, Path) else Submission(source=kernel, **kw)
    return evaluate(problem, sub, options)


def assert_verdict(result: Result, verdict: Verdict, *needles: str) -> None:
    text = f"{result.message}\n{result.logs.compile}\n{result.logs.run}"
    assert result.verdict == verdict, result.model_dump_json(indent=1)
    for needle in needles:
        assert needle in text, f"{needle!r} not in:\n{text}"


# -- correct candidates ------------------------------------------------------------------------


def test_cpp_correct_with_timing_and_baseline(cpu_options: EvalOptions) -> None:
    statuses: list[Status] = []
    result = evaluate(
        RELU,
        Submission.from_file(EXAMPLES / "relu_cpp.cpp", metadata={"model": "m1"}),
        cpu_options,
        statuses.append,
    )
    assert_verdict(result, Verdict.CORRECT)
    assert statuses == [Status.COMPILING, Status.RUNNING]
    assert result.compiled and result.correct and result.status == Status.DONE
    assert result.problem_id == RELU.id and result.metadata == {"model": "m1"}
    c = result.correctness
    assert c is not None and (c.trials, c.passed, c.max_abs_err, c.atol, c.rtol) == (3, 3, 0.0, 1e-2, 1e-2)
    assert result.timing is not None and result.timing.n >= 3 and result.timing.median_ms > 0
    assert not result.timing.l2_flushed
    assert result.baseline is not None and result.baseline.eager_ms and result.baseline.compile_ms is None
    assert result.speedup is not None and result.speedup.vs_eager == pytest.approx(
        result.baseline.eager_ms / result.timing.median_ms
    )
    assert result.target is not None and result.target.backend.value == "cpu"
    for phase in (
        "compile",
        "run",
        "process_start",
        "import",
        "inputs",
        "load",
        "correctness",
        "timing",
        "total",
    ):
        assert phase in result.durations_s


def _baseline_cached_quietly(options: EvalOptions, tries: int = 4) -> None:
    """Until the cache holds a quiet baseline of RELU: re-evaluate the C++ candidate. A shared
    CI host can disturb a CPU timing even in the quiet lane; each disturbed baseline must then be
    flagged and kept out of the cache, which is asserted on the way."""
    root = baselines.BaselineCache(options.cache_dir).root  # type: ignore[arg-type]
    for _ in range(tries):
        if any(root.glob(f"{RELU.id}-*.json")):
            return
        result = run(options, EXAMPLES / "relu_cpp.cpp")
        assert_verdict(result, Verdict.CORRECT)
        assert result.baseline is not None
        cached = any(root.glob(f"{RELU.id}-*.json"))
        assert cached or result.baseline.contended, "a quiet baseline was measured and not cached"
        assert not (cached and result.baseline.contended), "a contended baseline was cached"
    if not any(root.glob(f"{RELU.id}-*.json")):
        pytest.fail(
            f"{tries} baselines of the ReLU problem in a row were contended: the host never went quiet"
        )


def test_triton_interpreter_correct(cpu_options: EvalOptions) -> None:
    # The lanes share one cache: the ReLU baseline is used by other files' evaluations too, and
    # every 25th use re-checks it in a baselines child (test_baseline_recheck.py's subject), which
    # would land on this evaluation now and then. Here the reuse alone is under test.
    options = cpu_options.model_copy(update={"baseline_recheck_every": 0})
    _baseline_cached_quietly(options)
    result = run(options, EXAMPLES / "relu_triton.py")
    assert_verdict(result, Verdict.CORRECT)
    # The baseline was cached by an earlier, quiet evaluation of this problem on this device: no
    # baseline child runs again, and the cached value is reported.
    assert "baselines_child" not in result.durations_s, result.durations_s
    assert result.baseline is not None and result.baseline.eager_ms
