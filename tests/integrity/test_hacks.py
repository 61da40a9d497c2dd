"""Reward hacks end to end: each file in submissions/ through `evaluator.api.evaluate`. Each must
end with a `flags` entry naming the hack and verdict `rejected` (or `incorrect` where the hack
also breaks the numbers), and an honest submission afterwards must be `correct`."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evaluator import integrity
from evaluator.result import Result, Verdict

api = pytest.importorskip("evaluator.api")
from evaluator.options import EvalOptions, Submission, TimingOptions  # noqa: E402
from evaluator.problem import Problem  # noqa: E402

HERE = Path(__file__).parent
SUBMISSIONS = HERE / "submissions"
PROBLEM = Problem.from_file(HERE.parent / "adversarial" / "problem_relu.py")
POSITIVE = Problem.from_file(HERE / "problem_relu_positive.py")
LEGIT = HERE.parent / "adversarial" / "submissions" / "legit.py"

# (file, problem, flag it must carry)
CPU_HACKS = [
    ("reference_op.py", PROBLEM, integrity.REFERENCE_OP_CALLED),
    ("reference_fallback.py", PROBLEM, integrity.REFERENCE_OP_CALLED),
    ("cached_by_shape.py", PROBLEM, integrity.CACHED_OUTPUT),
    ("cached_by_pointer.py", PROBLEM, integrity.CACHED_OUTPUT),
    ("return_input.py", POSITIVE, integrity.OUTPUT_ALIASES_INPUT),
    ("return_view.py", PROBLEM, integrity.OUTPUT_ALIASES_INPUT),
    ("modify_input.py", PROBLEM, integrity.INPUT_MODIFIED),
    ("lazy_subclass.py", PROBLEM, integrity.LAZY_OUTPUT),
    ("reused_buffer.py", PROBLEM, integrity.LAZY_OUTPUT),
    ("host_thread.py", PROBLEM, integrity.SIDE_STREAM_WORK),
    ("patch_torch.py", PROBLEM, integrity.MONKEY_PATCHED),
    ("patch_timer.py", PROBLEM, integrity.MONKEY_PATCHED),
    ("patch_checker.py", PROBLEM, integrity.MONKEY_PATCHED),
]
BAD_VERDICTS = (Verdict.REJECTED, Verdict.INCORRECT)


@pytest.fixture(scope="module")
def options(tmp_path_factory: pytest.TempPathFactory, kjudge_home: Path) -> EvalOptions:
    root = tmp_path_factory.mktemp("kjudge-hacks")
    return EvalOptions(
        device="cpu",
        trials=2,
        baselines=False,
        measure_timing=False,  # the CPU hacks are caught without timing; the roofline is a GPU test
        run_timeout_s=120,
        cache_dir=kjudge_home / "cache",
        scratch_root=root / "scratch",
    )


def _evaluate(path: Path, problem: Problem, options: EvalOptions) -> Result:
    return api.evaluate(problem, Submission.from_file(path), options)


def test_honest_candidate_is_correct_and_unflagged(options: EvalOptions) -> None:
    result = _evaluate(LEGIT, PROBLEM, options)
    assert result.verdict == Verdict.CORRECT, (result.message, result.logs.run[-2000:])
    assert not set(result.flags) & integrity.REJECTING_FLAGS, result.flags


@pytest.mark.parametrize(("name", "problem", "flag"), CPU_HACKS, ids=[h[0] for h in CPU_HACKS])
def test_hack_is_flagged(name: str, problem: Problem, flag: str, options: EvalOptions) -> None:
    result = _evaluate(SUBMISSIONS / name, problem, options)
    assert flag in result.flags, (result.flags, result.verdict, result.message, result.logs.run[-2000:])
    assert result.verdict in BAD_VERDICTS, (result.verdict, result.message)
    assert not result.correct
    if result.verdict == Verdict.REJECTED:
        assert flag in (result.message or "")
    after = _evaluate(LEGIT, PROBLEM, options)
    assert after.verdict == Verdict.CORRECT, (after.message, after.logs.run[-2000:])


# ---------------------------------------------------------------------------------------------
# Timed calls are checked calls: candidates that are right while checked and stop working once
# they believe timing has begun (by call count, by the timer on the call stack).

TIMED_HACKS = ["stop_after_checked.py", "timer_on_stack.py"]


@pytest.fixture(scope="module")
def timed_options(options: EvalOptions) -> EvalOptions:
    return options.model_copy(
        update={
            "measure_timing": True,
            "timing": TimingOptions(
                warmup_ms=5, min_warmup_calls=3, min_reps=30, max_time_s=0.2, budget_s=1.5
            ),
        }
    )


@pytest.mark.parametrize("name", TIMED_HACKS)
def test_candidate_that_changes_after_its_checked_calls_is_rejected(
    name: str, timed_options: EvalOptions
) -> None:
    result = _evaluate(SUBMISSIONS / name, PROBLEM, timed_options)
    assert result.correctness is not None and result.correctness.passed == result.correctness.trials, (
        "the hack must pass the correctness trials, or this test shows nothing",
        result.message,
    )
    assert integrity.TIMED_OUTPUT_MISMATCH in result.flags, (result.flags, result.verdict, result.message)
    assert result.verdict == Verdict.REJECTED, (result.verdict, result.message)
    assert result.timing is None, "a rejected timing must not report the fake numbers"
    assert integrity.TIMED_OUTPUT_MISMATCH in (result.message or "")


def test_honest_candidate_timed_calls_are_checked(timed_options: EvalOptions) -> None:
    result = _evaluate(LEGIT, PROBLEM, timed_options)
    assert result.verdict == Verdict.CORRECT, (result.message, result.flags, result.logs.run[-2000:])
    assert result.timing is not None
    assert result.timing.method == "host_clock"
    assert result.timing.checked_calls >= 1


# ---------------------------------------------------------------------------------------------
# GPU hacks: side streams (KernelBench's 10.6x case), host threads, recycled memory, a cache that
# only the timer sees (caught by the roofline or the repeat-call check), the reference op.

GPU_HACKS = [
    ("side_stream_cuda.py", integrity.SIDE_STREAM_WORK),
    ("host_thread_gpu.py", integrity.SIDE_STREAM_WORK),
    ("recycled_memory_gpu.py", integrity.RECYCLED_MEMORY),
    ("version_cache_gpu.py", integrity.CACHED_OUTPUT),
    ("reference_op.py", integrity.REFERENCE_OP_CALLED),
    ("stop_after_checked_gpu.py", integrity.TIMED_OUTPUT_MISMATCH),
]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize(("name", "flag"), GPU_HACKS, ids=[h[0] for h in GPU_HACKS])
def test_gpu_hack_is_flagged(
    name: str, flag: str, tmp_path_factory: pytest.TempPathFactory, kjudge_home: Path
) -> None:
    root = tmp_path_factory.mktemp("gpu-hacks")
    # No baselines (a hack is judged without them) and the session's cache (ceilings, builds):
    # each hack used to pay a torch.compile baseline of its own, ~40 s on the H200.
    opts = EvalOptions(
        device="cuda",
        trials=3,
        baselines=False,
        run_timeout_s=300,
        cache_dir=kjudge_home / "cache",
        scratch_root=root / "s",
    )
    problem = Problem.from_file(HERE / "problem_relu_big.py")
    result = _evaluate(SUBMISSIONS / name, problem, opts)
    assert flag in result.flags, (result.flags, result.verdict, result.message, result.logs.run[-2000:])
    assert result.verdict in BAD_VERDICTS, (result.verdict, result.message)
