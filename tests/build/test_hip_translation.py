"""HIP -> CUDA source translation (no compiler involved)."""

from __future__ import annotations

import pytest

from evaluator.targets import hip_on_cuda
from evaluator.targets.hip_on_cuda import UnsupportedHip, looks_like_hip, translate


def test_runtime_api_types_and_constants_are_renamed() -> None:
    src = (
        "hipStream_t s; hipEvent_t e; hipError_t err = hipMalloc(&p, n);\n"
        "hipMemcpy(d, h, n, hipMemcpyHostToDevice); hipEventRecord(e, s); hipEventSynchronize(e);\n"
        "if (hipGetLastError() != hipSuccess) {} hipFree(p); hipDeviceSynchronize();\n"
        "hipStreamCreate(&s); hipStreamDestroy(s); hipDeviceProp_t prop; hipGetDeviceProperties(&prop, 0);\n"
    )
    out = translate(src)
    for cuda_name in [
        "cudaStream_t",
        "cudaEvent_t",
        "cudaError_t",
        "cudaMalloc(",
        "cudaMemcpyHostToDevice",
        "cudaEventRecord",
        "cudaEventSynchronize",
        "cudaGetLastError",
        "cudaSuccess",
        "cudaFree",
        "cudaDeviceSynchronize",
        "cudaStreamCreate",
        "cudaStreamDestroy",
        "cudaDeviceProp ",
        "cudaGetDeviceProperties",
    ]:
        assert cuda_name in out, cuda_name
    assert "hip" not in out


def test_runtime_api_prefers_runtime_names_over_driver_api() -> None:
    # hipMalloc is the image of cuMemAlloc (driver) and cudaMalloc (runtime) in PyTorch's table.
    assert hip_on_cuda.identifier_map()["hipMalloc"] == "cudaMalloc"
    assert hip_on_cuda.identifier_map()["hipStream_t"] == "cudaStream_t"


def test_only_hip_names_are_inverted() -> None:
    # PyTorch's table also maps CUDA names to plain C types (e.g. nvtxRangeId_t -> int).
    out = translate("int f(int x) { return x; }\n")
    assert out == "int f(int x) { return x; }\n"


def test_line_structure_is_preserved() -> None:
    src = "#include <hip/hip_runtime.h>\n__global__ void k(float* x) {\n  x[0] = __shfl_down(x[0], 1);\n}\n"
    out = translate(src)
    assert out.count("\n") == src.count("\n")
    assert out.splitlines()[2].strip() == "x[0] = __shfl_down_sync(0xffffffffu, x[0], 1);"


@pytest.mark.parametrize(
    ("hip", "cuda"),
    [
        ("__shfl(v, 0)", "__shfl_sync(0xffffffffu, v, 0)"),
        ("__shfl_up(v, 1, 16)", "__shfl_up_sync(0xffffffffu, v, 1, 16)"),
        ("__shfl_xor (v, 4)", "__shfl_xor_sync(0xffffffffu, v, 4)"),
        ("__ballot(p)", "__ballot_sync(0xffffffffu, p)"),
        ("__any(p) && __all(q)", "__any_sync(0xffffffffu, p) && __all_sync(0xffffffffu, q)"),
        # Already explicit: untouched.
        ("__shfl_down_sync(m, v, 1)", "__shfl_down_sync(m, v, 1)"),
    ],
)
def test_maskless_warp_intrinsics_get_a_full_mask(hip: str, cuda: str) -> None:
    assert translate(hip) == cuda


def test_comments_and_strings_are_not_rewritten() -> None:
    src = '// hipMalloc in a comment\nconst char* s = "hipMalloc"; /* hipFree */ hipFree(p);\n'
    out = translate(src)
    assert "// hipMalloc in a comment" in out
    assert '"hipMalloc"' in out
    assert "/* hipFree */ cudaFree(p);" in out


def test_pytorch_hip_names_map_to_cuda() -> None:
    src = (
        "hipStream_t s = at::hip::getCurrentHIPStream();\n"
        "auto t = c10::hip::getCurrentHIPStream();\n"
        "at::hip::HIPStreamGuardMasqueradingAsCUDA g(t);\n"
        "C10_HIP_KERNEL_LAUNCH_CHECK();\n"
    )
    out = translate(src)
    assert "cudaStream_t s = at::cuda::getCurrentCUDAStream();" in out
    assert "c10::cuda::getCurrentCUDAStream()" in out
    assert "at::cuda::CUDAStreamGuard g(t);" in out
    assert "C10_CUDA_KERNEL_LAUNCH_CHECK();" in out


def test_bfloat16_and_half_names() -> None:
    out = translate("__hip_bfloat16 a; __hip_bfloat162 b; __half h; hip_bfloat16 c;")
    # hip_bfloat16 (the class) is provided by the shim header; __half is the same in CUDA.
    assert out == "__nv_bfloat16 a; __nv_bfloat162 b; __half h; hip_bfloat16 c;"


@pytest.mark.parametrize(
    ("hip_header", "cuda_header"),
    [
        ("<hip/hip_runtime.h>", "<cuda_runtime.h>"),
        ('"hip/hip_runtime.h"', '"cuda_runtime.h"'),
        ("<hip/hip_fp16.h>", "<cuda_fp16.h>"),
        ("<hip/hip_bf16.h>", "<cuda_bf16.h>"),
        ("<hip/hip_bfloat16.h>", "<cuda_bf16.h>"),
        ("<hip/hip_cooperative_groups.h>", "<cooperative_groups.h>"),
        ("<ATen/hip/HIPContext.h>", "<ATen/cuda/CUDAContext.h>"),
        ("<c10/hip/HIPStream.h>", "<c10/cuda/CUDAStream.h>"),
        ("<c10/hip/HIPGuard.h>", "<c10/cuda/CUDAGuard.h>"),
        ("<hipcub/hipcub.hpp>", "<cub/cub.cuh>"),
        ("<torch/extension.h>", "<torch/extension.h>"),
    ],
)
def test_includes(hip_header: str, cuda_header: str) -> None:
    assert translate(f"#include {hip_header}\n") == f"#include {cuda_header}\n"


def test_unknown_hip_header_is_a_clear_error_not_the_system_hip() -> None:
    out = translate("#include <hip/hip_ext.h>\n")
    assert out.startswith("#error")
    assert "hip/hip_ext.h" in out


def test_amd_only_builtins_are_refused_with_their_names() -> None:
    with pytest.raises(UnsupportedHip, match="__builtin_amdgcn_readfirstlane"):
        translate("int v = __builtin_amdgcn_readfirstlane(x);")
    # Mentioned in a comment only: fine.
    assert "cudaFree" in translate("// __builtin_amdgcn_s_sleep is not used\nhipFree(p);")


def test_looks_like_hip() -> None:
    assert looks_like_hip("#include <hip/hip_runtime.h>\n")
    assert looks_like_hip("hipLaunchKernelGGL(k, 1, 1, 0, 0, x);")
    assert looks_like_hip("hipMemcpyAsync(a, b, n, hipMemcpyDeviceToDevice, s);")
    assert looks_like_hip("auto s = at::hip::getCurrentHIPStream();")
    assert not looks_like_hip("#include <cuda_runtime.h>\ncudaMalloc(&p, n); // no hip here")


def test_the_shims_half_part_only_for_code_that_names_a_half_type() -> None:
    from evaluator.targets.hip_on_cuda import shim_flags

    relu = "__global__ void relu(const float* x, float* y, int n) { y[0] = x[0]; }"
    assert "-DKJUDGE_HIP_HALF" not in shim_flags(relu) and shim_flags(relu)[-2] == "-include"
    for code in (
        "__half h;",
        "__nv_bfloat16 b;",  # a translated __hip_bfloat16
        "hip_bfloat16 c;",
        "#include <cuda_fp16.h>",
        "at::Half* p;",
        'AT_DISPATCH_REDUCED_FLOATING_TYPES(t, "k", [&] {});',
    ):
        assert "-DKJUDGE_HIP_HALF" in shim_flags(code), code
