"""Every example language on a GPU (skipped without one): CUDA, HIP through HIP-on-CUDA (or
natively on ROCm), Triton, and KernelBench's load_inline format with CUDA and with HIP."""

from __future__ import annotations

import pytest

from evaluator.api import evaluate
from evaluator.options import EvalOptions, Submission
from evaluator.problem import Problem
from evaluator.result import Verdict
from tests.evaluator.conftest import CASES, EXAMPLES

pytestmark = pytest.mark.gpu

RELU = Problem.from_file(EXAMPLES / "problem.py")


@pytest.mark.parametrize(
    "name",
    ["relu_cuda.cu", "relu_hip.hip", "relu_triton.py", "relu_kernelbench.py", "relu_kernelbench_hip.py"],
)
def test_example_correct_on_gpu(gpu_options: EvalOptions, name: str) -> None:
    result = evaluate(RELU, Submission.from_file(EXAMPLES / name), gpu_options)
    assert result.verdict == Verdict.CORRECT, result.model_dump_json(indent=1)
    assert result.target is not None and result.target.backend.value in ("cuda", "rocm")
    assert result.target.arch.startswith(("sm_", "gfx"))
    assert result.timing is not None and result.timing.l2_flushed and result.timing.n >= 10
    assert result.baseline is not None and result.baseline.eager_ms and result.baseline.compile_ms
    assert result.speedup is not None and result.speedup.vs_eager and result.speedup.vs_compile
    assert result.correctness is not None and result.correctness.passed == 3
    assert "side_stream_work" not in result.flags
    # A ~5 us kernel: timed many calls at a time, the launch cost reported apart, calls checked.
    assert result.timing.method in ("cuda_graph", "back_to_back_events"), result.timing
    assert result.timing.calls_per_sample >= 8 and result.timing.launch_overhead_us is not None
    assert result.timing.checked_calls >= 1
    # The roofline report, from the ceilings the parent measured once for this device.
    roof = result.roofline
    assert roof is not None and roof.device == result.target.device
    assert roof.limiter == "memory" and roof.achieved_gbps > 0 and 0 < roof.fraction_of_bound < 1.5
    assert "roofline" in result.durations_s


@pytest.mark.parametrize(
    ("case", "verdict", "needle"),
    [
        ("kb_wrong_shape.py", Verdict.INCORRECT, "shape"),
        ("gpu_unwritten_output.py", Verdict.INCORRECT, "nan"),
        ("kb_raises.py", Verdict.RUNTIME_ERROR, "kernel launch failed"),
    ],
)
def test_wrong_candidates_on_gpu(gpu_options: EvalOptions, case: str, verdict: Verdict, needle: str) -> None:
    result = evaluate(RELU, Submission.from_file(CASES / case), gpu_options)
    assert result.verdict == verdict, result.model_dump_json(indent=1)
    assert needle in (result.message or "").lower()


def test_cpp_example_on_gpu_device_is_runtime_error(gpu_options: EvalOptions) -> None:
    """relu_cpp.cpp checks that it got a CPU tensor: on the GPU its TORCH_CHECK fires."""
    result = evaluate(RELU, Submission.from_file(EXAMPLES / "relu_cpp.cpp"), gpu_options)
    assert result.verdict == Verdict.RUNTIME_ERROR and "expects a CPU tensor" in (result.message or "")
