"""Result.feedback (evaluator/feedback.py) from the compiler logs and results kjudge produces.
End-to-end feedback of real evaluations is asserted in tests/rewards/test_adaptors.py."""

from __future__ import annotations

from evaluator.feedback import MAX_CHARS, compile_errors, feedback, scrub
from evaluator.profiling.models import Profile
from evaluator.result import Baseline, Correctness, Logs, Result, Roofline, Speedup, Timing, Verdict

SOURCE = "#include <torch/extension.h>\n\ntorch::Tensor forward(torch::Tensor x) {\n    auto y = x.clamp_min(0)\n    return y;\n}\n"
# What build_native's g++ log looks like (a scratch path of the build child).
GCC_LOG = """== submission.cpp: FAILED
/tmp/kjudge-build-ckcz3iae/work/submission.cpp: In function 'at::Tensor forward(at::Tensor)':
/tmp/kjudge-build-ckcz3iae/work/submission.cpp:5:5: error: expected ',' or ';' before 'return'
    5 |     return y;
      |     ^~~~~~
"""
KB_SOURCE = '''import torch
from torch.utils.cpp_extension import load_inline

cpp_src = """
torch::Tensor relu(torch::Tensor x) {
    return x.clamp_min(0) + undefined_thing;
}
"""
mod = load_inline(name="r", cpp_sources=cpp_src, functions=["relu"])
'''
# load_inline builds main.cpp with a prepended include: its line numbers are not the candidate's.
KB_LOG = """/root/.kjudge/cache/inline/r/main.cpp:4:28: error: 'undefined_thing' was not declared in this scope
    4 |     return x.clamp_min(0) + undefined_thing;
      |                            ^~~~~~~~~~~~~~~
"""
NVCC_LOG = """/tmp/kjudge-build-x/work/submission.cu(4): error: identifier "y" is undefined
      return y;
             ^
"""


def _result(verdict: Verdict, **kw: object) -> Result:
    return Result(problem_id="p", verdict=verdict, **kw)  # type: ignore[arg-type]


def test_compile_errors_point_at_the_candidates_lines() -> None:
    text = feedback(_result(Verdict.COMPILE_ERROR, logs=Logs(compile=GCC_LOG)), SOURCE)
    assert "line 5: expected ',' or ';' before 'return'" in text
    assert "return y;" in text
    assert "/tmp" not in text and "kjudge-build" not in text


def test_errors_in_generated_files_are_found_in_the_candidates_source() -> None:
    (err,) = compile_errors(KB_LOG, KB_SOURCE)
    assert err.line == 6 and "undefined_thing" in err.message  # line 6 of the Python module
    (nv,) = compile_errors(NVCC_LOG, "#include <x>\nint a;\n\n  return y;\n")
    assert nv.line == 4 and 'identifier "y" is undefined' in nv.message


def test_the_first_mismatch_with_its_tolerance() -> None:
    message = (
        "correctness trial 1/5: 118365 element(s) outside atol=0.01, rtol=0.01; "
        "first: output[0, 0] = -0.09713355451822281, expected 0.0"
    )
    result = _result(
        Verdict.INCORRECT,
        correctness=Correctness(
            trials=1, passed=0, max_abs_err=0.1, max_rel_err=0.0, atol=0.01, rtol=0.01, message=message
        ),
        message=message,
    )
    text = feedback(result)
    assert "first mismatch at output[0, 0]: got -0.09713355451822281, expected 0.0" in text
    assert "atol=0.01, rtol=0.01" in text and "118365 element(s)" in text and "trial 1/5" in text


def test_each_flag_is_explained() -> None:
    text = feedback(_result(Verdict.REJECTED, flags=["output_aliases_input", "input_modified", "new_flag"]))
    assert "Flag output_aliases_input: an output shares memory with an input" in text
    assert "Flag input_modified: the kernel wrote into its inputs" in text
    assert "Flag new_flag: an integrity check fired." in text


def test_correct_reports_speedup_roofline_headroom_and_the_profile() -> None:
    result = _result(
        Verdict.CORRECT,
        timing=Timing(median_ms=0.5, mean_ms=0.5, std_ms=0.01, min_ms=0.49, n=100, l2_flushed=True),
        baseline=Baseline(eager_ms=1.0, compile_ms=0.6),
        speedup=Speedup(vs_eager=2.0, vs_compile=1.2),
        roofline=Roofline(
            achieved_gbps=1,
            achieved_tflops=0,
            bound_ms=0.125,
            fraction_of_bound=0.25,
            limiter="memory",
            device="d",
        ),
        profile=Profile(available=True, bottleneck="relu_kernel: memory-bound at 62% of DRAM peak"),
    )
    text = feedback(result)
    assert "2.00x speedup vs eager, 1.20x vs torch.compile" in text
    assert "25% of the memory-bound limit" in text and "at most 4.0x faster" in text
    assert "Profile: relu_kernel: memory-bound at 62% of DRAM peak" in text


def test_bounded_and_scrubbed() -> None:
    log = "\n".join(f"/home/me/.kjudge/cache/x/submission.cpp:{i}:1: error: bad {i}" for i in range(1, 400))
    run_log = (
        "Traceback\n"
        + "x" * 5000
        + "\nconnect postgresql://kjudge:s3cret@db:5432/kjudge with kj_abcdefghijklmnopqrstuv\n"
    )
    text = feedback(_result(Verdict.COMPILE_ERROR, logs=Logs(compile=log)), "a\n" * 400)
    assert len(text) <= MAX_CHARS and text.count("- line") == 3  # the first three errors only
    run = feedback(_result(Verdict.RUNTIME_ERROR, message="crashed", logs=Logs(run=run_log)))
    assert "s3cret" not in run and "kj_abcdefghijklmnopqrstuv" not in run and len(run) <= MAX_CHARS
    assert scrub("see /tmp/kjudge-eval-abc/kjudge_candidate.py line 3") == "see kjudge_candidate.py line 3"


def test_every_integrity_flag_has_its_sentence() -> None:
    from evaluator import integrity
    from evaluator.feedback import FLAG_SENTENCES

    missing = (set(integrity.REJECTING_FLAGS) | {integrity.NO_CUSTOM_KERNEL}) - set(FLAG_SENTENCES)
    assert not missing, f"add a sentence to evaluator/feedback.py FLAG_SENTENCES for {sorted(missing)}"


def test_no_profile_line_without_a_bottleneck() -> None:
    result = _result(Verdict.CORRECT, profile=Profile(available=False, message="profile mode is off"))
    assert "Profile:" not in feedback(result)
