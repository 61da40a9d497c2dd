"""Compiler command lines and architecture selection, with fake targets (no GPU, no hipcc)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.build.load_inline_shim import strip_arch_flags
from evaluator.result import Backend, Target
from evaluator.targets import cuda, rocm


def _t(backend: Backend, arch: str) -> Target:
    return Target(backend=backend, arch=arch, device="fake")


@pytest.mark.parametrize(
    ("arch", "flags"),
    [
        ("sm_90", ["-gencode", "arch=compute_90,code=sm_90"]),
        ("sm_90a", ["-gencode", "arch=compute_90a,code=sm_90a"]),
        ("sm_80", ["-gencode", "arch=compute_80,code=sm_80"]),
        ("sm_100a", ["-gencode", "arch=compute_100a,code=sm_100a"]),
    ],
)
def test_nvcc_generates_for_the_device_arch_only(arch: str, flags: list[str]) -> None:
    assert cuda.gencode_flags(_t(Backend.CUDA, arch)) == flags


@pytest.mark.parametrize("arch", ["gfx942", "90", "sm90", "compute_90", "sm_90;rm -rf /"])
def test_bad_nvidia_arch_is_refused(arch: str) -> None:
    with pytest.raises(ValueError, match="not an NVIDIA architecture"):
        cuda.gencode_flags(_t(Backend.CUDA, arch))


def test_nvcc_command_line() -> None:
    cmd = cuda.nvcc_compile_command(
        source=Path("k.cu"),
        output=Path("k.o"),
        target=_t(Backend.CUDA, "sm_90"),
        cxx_std="c++20",
        includes=["-Iinc"],
        defines=["-DX=1"],
        extra=["--use_fast_math"],
    )
    assert cmd[0].endswith("nvcc")
    assert cmd[cmd.index("-c") + 1] == "k.cu" and cmd[cmd.index("-o") + 1] == "k.o"
    assert "-O2" in cmd and "-O3" not in cmd and "-std=c++20" in cmd
    assert cmd[cmd.index("-gencode") + 1] == "arch=compute_90,code=sm_90"
    assert cmd.count("-gencode") == 1 and not any(c.startswith("-arch") for c in cmd)
    assert cmd[cmd.index("-Xcompiler") + 1] == "-fPIC"
    assert cmd[-3:] == ["-DX=1", "-Iinc", "--use_fast_math"]


@pytest.mark.parametrize(
    ("gcn_arch_name", "offload"),
    [
        ("gfx942:sramecc+:xnack-", "gfx942"),
        ("gfx950", "gfx950"),
        ("gfx90a:xnack+", "gfx90a"),
        ("gfx1100", "gfx1100"),
    ],
)
def test_offload_arch_drops_feature_suffixes(gcn_arch_name: str, offload: str) -> None:
    assert rocm.offload_arch(gcn_arch_name) == offload
    assert rocm.offload_arch_flags(_t(Backend.ROCM, gcn_arch_name)) == [f"--offload-arch={offload}"]


@pytest.mark.parametrize("arch", ["sm_90", "gfx", "gfx94z", "", "gfx942 --x"])
def test_bad_amd_arch_is_refused(arch: str) -> None:
    with pytest.raises(ValueError, match="not an AMD GPU architecture"):
        rocm.offload_arch(arch)


def test_hipcc_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    cmd = rocm.hipcc_compile_command(
        source=Path("k.hip"),
        output=Path("k.o"),
        target=_t(Backend.ROCM, "gfx942:sramecc+:xnack-"),
        cxx_std="c++17",
        includes=["-Iinc"],
        defines=["-DTORCH_EXTENSION_NAME=m"],
        extra=[],
        hipcc="/opt/rocm/bin/hipcc",
    )
    assert cmd[:4] == ["/opt/rocm/bin/hipcc", "-c", "-x", "hip"]
    assert "--offload-arch=gfx942" in cmd
    assert [c for c in cmd if c.startswith("--offload-arch")] == ["--offload-arch=gfx942"]
    assert "-O2" in cmd and "-fPIC" in cmd and "-std=c++17" in cmd
    assert "-D__HIP_PLATFORM_AMD__=1" in cmd and "-DUSE_ROCM=1" in cmd
    assert "-DTORCH_EXTENSION_NAME=m" in cmd


def test_rocm_link_flags_use_torch_hip_libraries_that_exist(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "lib").mkdir()
    monkeypatch.setenv("ROCM_HOME", str(tmp_path))
    flags = rocm.link_flags("/torch/lib", {"c10_hip", "torch_hip", "torch"})
    assert flags[:2] == ["-lc10_hip", "-ltorch_hip"]
    assert f"-L{tmp_path / 'lib'}" in flags and flags[-1] == "-lamdhip64"
    assert "-lc10_hip" not in rocm.link_flags("/torch/lib", {"torch"})


def test_cuda_link_flags_only_link_torch_cuda_libraries_that_exist() -> None:
    assert "-ltorch_cuda" not in cuda.link_flags("/torch/lib", {"torch", "c10"})
    flags = cuda.link_flags("/torch/lib", {"c10_cuda", "torch_cuda"})
    assert flags[:2] == ["-lc10_cuda", "-ltorch_cuda"] and flags[-1] == "-lcudart"


def test_candidate_arch_flags_are_dropped() -> None:
    flags = [
        "-O3",
        "-arch=sm_80",
        "-gencode",
        "arch=compute_80,code=sm_80",
        "--use_fast_math",
        "--gpu-architecture=sm_70",
        "-gencode=arch=compute_75,code=sm_75",
        "--offload-arch=gfx90a",
        "-lineinfo",
    ]
    assert strip_arch_flags(flags) == ["-O3", "--use_fast_math", "-lineinfo"]


def test_cuda_sources_are_hipified_by_pytorch_for_rocm() -> None:
    src = (
        "#include <cuda_runtime.h>\n#include <ATen/cuda/CUDAContext.h>\n"
        "__global__ void k(float* x) {}\n"
        "void run(float* x) { cudaStream_t s = at::cuda::getCurrentCUDAStream(); k<<<1, 32, 0, s>>>(x);"
        " cudaError_t e = cudaGetLastError(); }\n"
    )
    out = rocm.hipify_cuda_source(src)
    assert "#include <hip/hip_runtime.h>" in out
    assert "hipStream_t s" in out and "hipGetLastError" in out
    assert "cudaStream_t" not in out
