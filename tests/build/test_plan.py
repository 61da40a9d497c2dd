"""Which units a submission becomes, per language and target (no compiler runs here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.build.load_inline_shim import NativeBuildError, is_hip_request, plan_inline
from evaluator.build.models import UnitKind
from evaluator.build.native import PlanError, plan
from evaluator.result import Language, Target

from ._support import REPO, SAMPLES

CUDA_SRC = """#include <torch/extension.h>
__global__ void relu_k(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = fmaxf(x[i], 0.f); }
torch::Tensor forward(torch::Tensor x) {
  auto y = torch::empty_like(x); int n = x.numel();
  relu_k<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""


def test_cpp_is_one_host_unit_with_a_generated_binding(cpu_target: Target) -> None:
    spec = plan(
        "#include <torch/extension.h>\ntorch::Tensor forward(torch::Tensor x) { return x; }\n",
        Language.CPP,
        "forward",
        cpu_target,
    )
    assert [u.kind for u in spec.units] == [UnitKind.CXX]
    assert "torch::wrap_pybind_function(forward)" in spec.units[0].code
    assert not spec.units[0].glue  # the author's code: built -O2 like everything measured
    assert spec.module_name.startswith("kjudge_")


def test_cuda_splits_device_code_from_the_binding(sm90_target: Target) -> None:
    spec = plan(CUDA_SRC, Language.CUDA, "forward", sm90_target)
    device, glue = spec.units
    assert device.kind is UnitKind.CUDA and device.light_torch and device.torch_half_defines
    assert "PYBIND11_MODULE" not in device.code
    assert device.code.startswith('#line 1 "submission.cu"\n')
    assert glue.kind is UnitKind.CXX and "torch::Tensor forward(torch::Tensor x);" in glue.code
    assert glue.glue and not device.glue
    # If the light device unit fails, one unit with the real headers and the binding is tried.
    assert spec.fallback_units is not None and len(spec.fallback_units) == 1
    assert "PYBIND11_MODULE" in spec.fallback_units[0].code and not spec.fallback_units[0].light_torch


def test_hip_on_nvidia_is_translated_and_shimmed(sm90_target: Target) -> None:
    spec = plan((SAMPLES / "hip_api_subset.hip").read_text(), Language.HIP, "forward", sm90_target)
    device = spec.units[0]
    assert device.kind is UnitKind.CUDA and device.hip_shim and not device.torch_half_defines
    assert "hipMalloc" not in device.code and "cudaEventRecord" in device.code
    assert device.code.startswith('#line 1 "submission.hip"\n')


def test_hip_on_rocm_is_native(gfx942_target: Target) -> None:
    src = (SAMPLES / "hip_api_subset.hip").read_text()
    device = plan(src, Language.HIP, "forward", gfx942_target).units[0]
    assert device.kind is UnitKind.HIP and not device.hip_shim
    assert "hipEventRecord" in device.code


def test_cuda_on_rocm_goes_through_hipify(gfx942_target: Target) -> None:
    device = plan(CUDA_SRC, Language.CUDA, "forward", gfx942_target).units[0]
    assert device.kind is UnitKind.HIP and device.torch_half_defines
    assert "hipLaunchKernelGGL" in device.code or "<<<" in device.code


def test_own_pybind_module_keeps_its_name_and_one_unit(sm90_target: Target) -> None:
    src = CUDA_SRC + 'PYBIND11_MODULE(my_relu, m) { m.def("forward", &forward); }\n'
    spec = plan(src, Language.CUDA, "forward", sm90_target)
    assert spec.module_name == "my_relu"
    assert len(spec.units) == 1 and not spec.units[0].light_torch and spec.fallback_units is None


@pytest.mark.parametrize("language", [Language.CPP, Language.CUDA, Language.HIP])
def test_missing_entry_names_the_function(language: Language, sm90_target: Target) -> None:
    with pytest.raises(PlanError, match="defines no function `launch`"):
        plan(CUDA_SRC, language, "launch", sm90_target)


def test_gpu_languages_need_a_gpu_target(cpu_target: Target) -> None:
    with pytest.raises(PlanError, match="need a GPU target"):
        plan(CUDA_SRC, Language.CUDA, "forward", cpu_target)


def _kernelbench_hip_source() -> str:
    text = (REPO / "examples" / "relu" / "relu_kernelbench_hip.py").read_text()
    return text.split('relu_cpp_source = """', 1)[1].split('"""', 1)[0]


def test_kernelbench_hip_prompt_form_becomes_nvcc_unit_plus_binding(
    sm90_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CXX", "hipcc")
    spec = plan_inline(
        sm90_target,
        "relu_hip",
        [_kernelbench_hip_source()],
        [],
        {"relu_hip": "relu_hip"},
        extra_cflags=[],
        extra_cuda_cflags=[],
        extra_ldflags=[],
        extra_include_paths=[],
    )
    device, glue = spec.units
    assert (
        device.name == "main.cu" and device.kind is UnitKind.CUDA and device.hip_shim and device.light_torch
    )
    assert "#include <cuda_runtime.h>" in device.code
    assert glue.kind is UnitKind.CXX and "torch::Tensor relu_hip(torch::Tensor x);" in glue.code


def test_kernelbench_cuda_form_keeps_host_and_device_units(
    sm90_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CXX", raising=False)
    cuda_src = CUDA_SRC.replace("forward", "relu_cuda")
    spec = plan_inline(
        sm90_target,
        "relu_ext",
        ["torch::Tensor relu_cuda(torch::Tensor x);"],
        [cuda_src],
        {"relu_cuda": "relu_cuda"},
        extra_cflags=["-O3"],
        extra_cuda_cflags=["-O3", "-arch=sm_70", "--use_fast_math"],
        extra_ldflags=[],
        extra_include_paths=[],
    )
    host, device = spec.units
    assert host.kind is UnitKind.CXX and "PYBIND11_MODULE" in host.code
    assert (
        device.name == "cuda.cu"
        and device.kind is UnitKind.CUDA
        and device.light_torch
        and not device.hip_shim
    )
    assert spec.extra_cuda_cflags == ["-O3", "--use_fast_math"]
    # PyTorch prepends <torch/types.h>; the light unit prepends the shadowed <torch/extension.h>,
    # and the fallback keeps PyTorch's own header.
    assert device.code.startswith("#include <torch/extension.h>") and "torch/types.h" not in device.code
    assert spec.fallback_units is not None
    assert spec.fallback_units[-1].code.startswith("#include <torch/types.h>")


def test_cuda_sources_on_cpu_target_are_refused(cpu_target: Target) -> None:
    with pytest.raises(NativeBuildError, match="need a GPU target"):
        plan_inline(
            cpu_target,
            "x",
            ["int f();"],
            [CUDA_SRC],
            None,
            extra_cflags=[],
            extra_cuda_cflags=[],
            extra_ldflags=[],
            extra_include_paths=[],
        )


def test_hip_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", "/opt/rocm/bin/hipcc")
    assert is_hip_request(["int f();"])
    monkeypatch.setenv("CXX", "g++")
    assert not is_hip_request(["int f();"])
    assert is_hip_request(["#include <hip/hip_runtime.h>\n"])
    monkeypatch.delenv("CXX")
    assert is_hip_request(["hipLaunchKernelGGL(k, 1, 1, 0, 0);"])


def test_rocm_passthrough_pins_arch_and_build_dir(
    gfx942_target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torch.utils import cpp_extension

    from evaluator.build import install_load_inline_shim

    calls: list[dict[str, object]] = []

    def fake_load_inline(
        name, cpp_sources, cuda_sources=None, functions=None, build_directory=None, verbose=False
    ):  # type: ignore[no-untyped-def]
        import os

        calls.append(
            {"name": name, "build_directory": build_directory, "arch": os.environ.get("PYTORCH_ROCM_ARCH")}
        )
        return "module"

    monkeypatch.setattr(cpp_extension, "load_inline", fake_load_inline)
    monkeypatch.setattr(cpp_extension, "load", fake_load_inline)
    monkeypatch.delenv("PYTORCH_ROCM_ARCH", raising=False)
    install_load_inline_shim(gfx942_target, tmp_path)
    assert cpp_extension.load_inline("relu_hip", "src", functions=["relu_hip"]) == "module"
    assert cpp_extension.load_inline(name="relu_hip", cpp_sources="src", functions=["relu_hip"]) == "module"
    assert calls[0]["arch"] == "gfx942"
    assert str(calls[0]["build_directory"]).startswith(str(tmp_path))
    assert calls[0]["build_directory"] == calls[1]["build_directory"]  # same content, same directory


@pytest.mark.parametrize(
    ("log", "retry"),
    [
        ('submission.cu(9): error: namespace "torch" has no member "nn"', True),
        ('submission.cu(4): error: identifier "py" is undefined', True),
        ("submission.cu:4:3: error: 'pybind11' was not declared in this scope", True),
        ('submission.cu(7): error: expected a ";"', False),
        ("submission.cu(2): error: too few arguments in function call", False),
        # the light header's torch::kFloat32 next to a source's own <torch/types.h> include
        ('types.h(47): error: variable "torch::kUInt8" has already been defined', True),
        ('k.cu(5): error: no instance of overloaded function "torch::empty" matches the argument list', True),
        ('k.cu(5): error: no instance of overloaded function "my_helper" matches the argument list', False),
    ],
)
def test_light_units_are_retried_only_for_missing_declarations(log: str, retry: bool) -> None:
    from evaluator.build.engine import _MISSING_DECLARATION

    assert bool(_MISSING_DECLARATION.search(log)) is retry


def test_sources_that_include_all_of_aten_do_not_take_the_light_header() -> None:
    from evaluator.build.binding import light_header_safe

    kernel = "__global__ void k() {}\ntorch::Tensor forward(torch::Tensor x) { return x; }\n"
    assert light_header_safe("#include <torch/extension.h>\n" + kernel)
    for header in ("torch/types.h", "torch/torch.h", "ATen/ATen.h"):
        assert not light_header_safe(f"#include <{header}>\n" + kernel), header
