"""Real builds on the CI box: cpp end to end (built, loaded, run), HIP-on-CUDA built and linked.

Builds share the session cache (one precompiled header); each costs 10-50 s on 2 cores.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from evaluator.build import build_native, install_load_inline_shim, load_module
from evaluator.build.models import BuildOutput
from evaluator.result import Language, Target

from ._support import SAMPLES, requires_nvcc

pytestmark = pytest.mark.slow

CPP_SRC = """#include <torch/extension.h>
// forward(x, y) = relu(x) + 2 * y, written out as loops over contiguous float tensors.
torch::Tensor forward(torch::Tensor x, torch::Tensor y) {
  TORCH_CHECK(x.sizes() == y.sizes(), "shape mismatch");
  auto xc = x.contiguous(), yc = y.contiguous();
  auto out = torch::empty_like(xc);
  const float* xp = xc.data_ptr<float>();
  const float* yp = yc.data_ptr<float>();
  float* op = out.data_ptr<float>();
  for (int64_t i = 0; i < xc.numel(); ++i) op[i] = (xp[i] > 0 ? xp[i] : 0.f) + 2.f * yp[i];
  return out;
}
"""


@pytest.fixture(scope="session")
def cpp_build(build_cache: Path, cpu_target: Target) -> BuildOutput:
    return build_native(CPP_SRC, Language.CPP, "forward", cpu_target, build_cache, timeout_s=600)


def test_cpp_builds_in_the_sandbox_and_runs(cpp_build: BuildOutput) -> None:
    assert cpp_build.ok, cpp_build.log
    assert cpp_build.module_path is not None and cpp_build.module_path.exists()
    module = load_module(cpp_build)
    x, y = torch.randn(1000), torch.randn(1000)
    torch.testing.assert_close(module.forward(x, y), x.relu() + 2 * y)


def test_errors_from_torch_check_reach_python(cpp_build: BuildOutput) -> None:
    module = load_module(cpp_build)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        module.forward(torch.zeros(3), torch.zeros(4))


def test_second_build_is_a_cache_hit(cpp_build: BuildOutput, build_cache: Path, cpu_target: Target) -> None:
    start = time.monotonic()
    again = build_native(CPP_SRC, Language.CPP, "forward", cpu_target, build_cache)
    assert again.ok and again.cached
    assert again.module_path == cpp_build.module_path
    assert time.monotonic() - start < 5


def test_other_entry_or_target_is_another_module(
    cpp_build: BuildOutput, build_cache: Path, cpu_target: Target
) -> None:
    from evaluator.build.engine import spec_key
    from evaluator.build.native import plan

    src = CPP_SRC.replace("forward", "launch")
    assert spec_key(plan(src, Language.CPP, "launch", cpu_target)) != spec_key(
        plan(CPP_SRC, Language.CPP, "forward", cpu_target)
    )


def test_missing_entry_is_reported_without_compiling(build_cache: Path, cpu_target: Target) -> None:
    out = build_native(CPP_SRC, Language.CPP, "launch", cpu_target, build_cache)
    assert not out.ok and out.message is not None
    assert "`launch`" in out.message
    assert out.seconds < 5


def test_compile_error_comes_back_as_a_log(
    cpp_build: BuildOutput, build_cache: Path, cpu_target: Target
) -> None:
    broken = CPP_SRC.replace("return out;", "return undefined_name;")
    out = build_native(broken, Language.CPP, "forward", cpu_target, build_cache)
    assert not out.ok
    assert out.message == "compilation failed; see logs.compile"
    assert "undefined_name" in out.log and "submission.cpp" in out.log


def test_load_inline_shim_builds_cpp_only_extensions(
    cpp_build: BuildOutput, build_cache: Path, cpu_target: Target
) -> None:
    from torch.utils import cpp_extension

    original = cpp_extension.load_inline
    install_load_inline_shim(cpu_target, build_cache)
    try:
        module = cpp_extension.load_inline(
            name="kjudge_test_inline_cpp",
            cpp_sources="torch::Tensor scale(torch::Tensor x, double s) { return x * s; }",
            functions=["scale"],
            extra_cflags=["-O3"],
        )
    finally:
        cpp_extension.load_inline = original
        cpp_extension.load = getattr(cpp_extension.load, "__kjudge_original__", cpp_extension.load)
    x = torch.randn(10)
    torch.testing.assert_close(module.scale(x, 3.0), x * 3.0)


@requires_nvcc
def test_hip_sample_builds_for_sm90_through_hip_on_cuda(build_cache: Path, sm90_target: Target) -> None:
    """The full HIP-on-CUDA pipeline with torch headers: translate, nvcc + g++ units, link."""
    out = build_native(
        (SAMPLES / "hip_api_subset.hip").read_text(),
        Language.HIP,
        "forward",
        sm90_target,
        build_cache,
        timeout_s=600,
    )
    assert out.ok, out.log
    assert out.module_path is not None and out.module_path.stat().st_size > 0
    assert "retrying" not in out.log  # the light device unit was enough
    assert "not used because" not in out.log  # the -O1 glue unit took the -O2 precompiled header
