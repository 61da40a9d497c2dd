"""A failed build whose errors are all names no header mentions is not compiled again with
PyTorch's headers (evaluator/build/undefined_names.py): that build would fail the same way, and
on the H100 it cost a KernelBench compile error 49 s instead of ~4."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.build.undefined_names import mentioned_in, only_own_undefined_names, undefined_names

NVCC = """\
/tmp/k/lite/submission.cu(41): error: identifier "kjudge_undeclared_7" is undefined
  static int kjudge_broken_7 = kjudge_undeclared_7;
                               ^

1 error detected in the compilation of "/tmp/k/lite/submission.cu".
"""
NVCC_NUMBERED = '/tmp/k/submission.cu(3): error #20: identifier "blockDimm" is undefined\n'
GCC = """\
/tmp/k/submission.cpp: In function 'at::Tensor forward(at::Tensor)':
/tmp/k/submission.cpp:7:12: error: 'scale_factor' was not declared in this scope; did you mean 'scale_fact'?
    7 |     return scale_factor * x;
      |            ^~~~~~~~~~~~
"""
CLANG = "/tmp/k/submission.hip:9:5: error: use of undeclared identifier 'hipLaunchKernelGGLX'\n"
SYNTAX = "/tmp/k/submission.cpp:4:15: error: expected ';' before '}' token\n"
MEMBER = '/tmp/k/submission.cu(12): error: namespace "at::cuda" has no member "getCurrentCUDAStream"\n'
MISSING_FILE = "/tmp/k/submission.cu:1:10: fatal error: cub/cub.cuh: No such file or directory\n"


def test_undefined_names_are_read_from_each_compiler() -> None:
    assert undefined_names(NVCC) == {"kjudge_undeclared_7"}
    assert undefined_names(NVCC_NUMBERED) == {"blockDimm"}
    assert undefined_names(GCC) == {"scale_factor"}
    assert undefined_names(CLANG) == {"hipLaunchKernelGGLX"}
    assert undefined_names(NVCC + GCC) == {"kjudge_undeclared_7", "scale_factor"}


@pytest.mark.parametrize("other", [SYNTAX, MEMBER, MISSING_FILE, ""])
def test_any_other_error_leaves_it_to_the_fuller_build(other: str) -> None:
    assert undefined_names(NVCC + other) is None if other else undefined_names(other) is None


def test_a_name_some_header_mentions_gets_the_fuller_build(tmp_path: Path) -> None:
    headers = tmp_path / "include"
    (headers / "c10" / "util").mkdir(parents=True)
    (headers / "c10" / "util" / "Exception.h").write_text(
        "// scale_factor is documented here\n#define TORCH_WARN(...)\n"
    )
    assert mentioned_in({"TORCH_WARN"}, [headers])
    assert mentioned_in({"nothing_here", "scale_factor"}, [headers, headers / "c10"])
    assert not mentioned_in({"kjudge_undeclared_7"}, [headers])
    assert not mentioned_in({"scale_fact"}, [headers])  # whole words only
    assert mentioned_in({"kjudge_undeclared_7"}, [tmp_path / "absent"])  # nothing searched: can't tell
    assert only_own_undefined_names(NVCC, [headers])
    assert not only_own_undefined_names(GCC, [headers])
    assert not only_own_undefined_names(NVCC + SYNTAX, [headers])


def test_the_fuller_build_sees_the_system_headers_torch_includes() -> None:
    """`strtok` compiles under PyTorch's headers (they include <cstring>) though the source never
    includes it: such a name is not the source's own error."""
    from evaluator.build.engine import _fuller_headers
    from evaluator.build.models import Unit, UnitKind

    dirs = _fuller_headers([Unit(name="submission.cpp", code="", kind=UnitKind.CXX)])
    log = "/tmp/k/submission.cpp:4:5: error: 'strtok' was not declared in this scope\n"
    assert not only_own_undefined_names(log, dirs)
    assert only_own_undefined_names(log.replace("strtok", "kjudge_nowhere_declared_x"), dirs)
