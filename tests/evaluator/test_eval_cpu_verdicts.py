"""The cpu target end to end through `evaluate`: every other verdict, bad inputs, and isolation
(the timed, cached-baseline path is test_eval_cpu.py's, in the quiet lane). Nothing here depends
on the host being idle, so these run in a lane beside other work."""

from __future__ import annotations

import pytest

from evaluator.options import EvalOptions
from evaluator.problem import Problem
from evaluator.result import Language, Verdict
from tests.evaluator.conftest import CASES, EXAMPLES
from tests.evaluator.test_eval_cpu import assert_verdict, run

# -- correct candidates ------------------------------------------------------------------------


def test_weights_match_and_dtype_setting(cpu_options: EvalOptions) -> None:
    linear = Problem.from_file(CASES / "problem_linear.py")
    assert_verdict(run(cpu_options, CASES / "linear_modelnew.py", linear), Verdict.CORRECT)
    half = Problem.from_file(CASES / "problem_half.py")
    result = run(cpu_options, CASES / "kb_relu.py", half)
    assert_verdict(result, Verdict.CORRECT, "candidate dtype torch.float16")
    assert result.correctness is not None and result.correctness.atol == 1e-3


def test_kernelbench_load_inline_on_cpu(cpu_options: EvalOptions) -> None:
    result = run(cpu_options, CASES / "kb_load_inline_cpp.py")
    assert_verdict(result, Verdict.CORRECT)
    # The sandboxed build used the parent's precompiled header, read-only (-Winvalid-pch would
    # say if GCC declined it), and built none where a later candidate's build would find it.
    cache = cpu_options.resolved_cache_dir()
    assert list((cache / "native" / "pch").glob("*/torch/extension.h.gch"))
    assert not (cache / "inline" / "pch").exists()
    assert "no precompiled header" not in result.logs.run and "not used because" not in result.logs.run


# -- wrong candidates --------------------------------------------------------------------------


def test_cpp_incorrect(cpu_options: EvalOptions) -> None:
    result = run(cpu_options, EXAMPLES / "relu_incorrect.cpp")
    assert_verdict(result, Verdict.INCORRECT, "correctness trial 1/3", "outside atol=0.01")
    assert result.compiled and not result.correct and result.timing is None
    assert result.correctness is not None and result.correctness.passed == 0
    assert result.correctness.max_abs_err > 0.01


def test_cpp_compile_error(cpu_options: EvalOptions) -> None:
    result = run(cpu_options, EXAMPLES / "relu_compile_error.cpp")
    assert_verdict(result, Verdict.COMPILE_ERROR, "undeclared_buffer")
    assert not result.compiled and result.correctness is None


def test_cpp_crash_then_next_evaluation_works(cpu_options: EvalOptions) -> None:
    result = run(cpu_options, EXAMPLES / "relu_crash.cpp")
    assert_verdict(result, Verdict.RUNTIME_ERROR, "SIGSEGV", "correctness trial 1/3")
    assert_verdict(run(cpu_options, EXAMPLES / "relu_cpp.cpp"), Verdict.CORRECT)


def test_python_crash_is_runtime_error(cpu_options: EvalOptions) -> None:
    assert_verdict(run(cpu_options, CASES / "kb_segfault.py"), Verdict.RUNTIME_ERROR, "SIGSEGV")


def test_hang_is_timeout_then_next_evaluation_works(cpu_options: EvalOptions) -> None:
    short = cpu_options.model_copy(update={"run_timeout_s": 15.0})
    result = run(short, EXAMPLES / "relu_hang.py")
    assert_verdict(result, Verdict.TIMEOUT, "correctness trial 1/3")
    assert result.durations_s["run"] < 40
    assert_verdict(run(cpu_options, EXAMPLES / "relu_triton.py"), Verdict.CORRECT)


@pytest.mark.parametrize(
    ("case", "verdict", "needle"),
    [
        ("kb_wrong_shape.py", Verdict.INCORRECT, "shape (16384, 16) but the reference has (16, 16384)"),
        ("kb_raises.py", Verdict.RUNTIME_ERROR, "RuntimeError: kernel launch failed"),
        ("kb_no_modelnew.py", Verdict.COMPILE_ERROR, "defines no ModelNew"),
        ("kb_import_error.py", Verdict.RUNTIME_ERROR, "ModuleNotFoundError"),
        ("kb_in_place.py", Verdict.REJECTED, "input_modified"),
    ],
)
def test_python_candidates(cpu_options: EvalOptions, case: str, verdict: Verdict, needle: str) -> None:
    result = run(cpu_options, CASES / case)
    assert_verdict(result, verdict, needle)
    # No time for losers: an incorrect or rejected candidate is never timed.
    assert result.timing is None and "timing" not in result.durations_s, result.durations_s


# -- bad input -------------------------------------------------------------------------------


def test_empty_source(cpu_options: EvalOptions) -> None:
    result = run(cpu_options, "  \n", language=Language.CPP)
    assert_verdict(result, Verdict.COMPILE_ERROR, "empty")
    assert set(result.durations_s) == {"total"}  # refused before any build or child process


def test_python_syntax_error_without_a_child(cpu_options: EvalOptions) -> None:
    result = run(cpu_options, "import torch\nclass ModelNew(:\n    pass\n", language=Language.KERNELBENCH)
    assert_verdict(result, Verdict.COMPILE_ERROR, "syntax error at line 2")


def test_missing_entry_function(cpu_options: EvalOptions) -> None:
    source = (EXAMPLES / "relu_cpp.cpp").read_text()
    result = run(cpu_options, source, language=Language.CPP, entry="relu_forward")
    assert_verdict(result, Verdict.COMPILE_ERROR, "relu_forward")


def test_wrong_arity_explains_parameters(cpu_options: EvalOptions) -> None:
    linear = Problem.from_file(CASES / "problem_linear.py")
    result = run(cpu_options, EXAMPLES / "relu_cpp.cpp", linear)
    assert_verdict(
        result, Verdict.RUNTIME_ERROR, "forward takes 1 tensor but the problem passes 1 input + 2 parameters"
    )


def test_problem_whose_get_inputs_fails(cpu_options: EvalOptions) -> None:
    problem = Problem.from_file(CASES / "problem_bad_inputs.py")
    result = run(cpu_options, EXAMPLES / "relu_triton.py", problem)
    assert_verdict(
        result, Verdict.RUNTIME_ERROR, "problem error", "get_inputs() raised ValueError: dataset file missing"
    )
    assert "problem_error" in result.flags


def test_gpu_language_on_cpu_is_compile_error(cpu_options: EvalOptions) -> None:
    assert_verdict(run(cpu_options, EXAMPLES / "relu_cuda.cu"), Verdict.COMPILE_ERROR)
