"""On an NVIDIA GPU: a CUDA candidate built with the lite torch API (evaluator/build/lite.py)
launches on PyTorch's current stream, dispatches Half, guards the device and reports launch
errors as PyTorch's headers would. Skipped without a GPU."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from evaluator.build import build_native, load_module
from evaluator.result import Language, Target

from ._support import requires_cuda_gpu

pytestmark = [pytest.mark.gpu, requires_cuda_gpu]

LITE_NOTE = "built with the lite torch API"


@pytest.fixture(autouse=True)
def _lite_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KJUDGE_LITE_CUDA", "1")  # whatever the default or the operator says


SCALE_HALF = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

template <typename scalar_t>
__global__ void scale_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n, float a) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = static_cast<scalar_t>(static_cast<float>(x[i]) * a);
}

torch::Tensor forward(torch::Tensor x, double a, int64_t threads) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    const at::cuda::OptionalCUDAGuard guard(device_of(x));
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const int64_t n = in.numel();
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(in.scalar_type(), "scale", ([&] {
        scale_kernel<scalar_t><<<(n + threads - 1) / threads, threads, 0, stream>>>(
            in.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n, static_cast<float>(a));
    }));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""


def test_a_lite_cuda_module_runs_on_the_current_stream(build_cache: Path, device_target: Target) -> None:
    out = build_native(
        SCALE_HALF + f"// {time.time_ns()}\n", Language.CUDA, "forward", device_target, build_cache
    )
    assert out.ok and LITE_NOTE in out.log, out.log
    module = load_module(out)
    x = torch.randn(100_003, device="cuda")
    for dtype in (torch.float32, torch.float16, torch.float64):
        got = module.forward(x.to(dtype), 2.0, 256)
        torch.testing.assert_close(got, (x.to(dtype).float() * 2).to(dtype))
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        y = module.forward(x, 3.0, 128)  # queued on `side`, after the work already there
    side.synchronize()
    torch.testing.assert_close(y, x * 3)
    with pytest.raises(RuntimeError, match="CUDA error"):
        module.forward(x, 1.0, 4096)  # more threads per block than any GPU allows: a launch error
    with pytest.raises(RuntimeError, match="x must be a CUDA tensor"):
        module.forward(x.cpu(), 1.0, 256)
    with pytest.raises(RuntimeError, match="not implemented for 'Int'"):
        module.forward(x.int(), 1.0, 256)


def test_the_relu_example_builds_lite_and_is_exact(build_cache: Path, device_target: Target) -> None:
    source = (Path(__file__).resolve().parents[2] / "examples" / "relu" / "relu_cuda.cu").read_text()
    out = build_native(
        source + f"// {time.time_ns()}\n", Language.CUDA, "forward", device_target, build_cache
    )
    assert out.ok and LITE_NOTE in out.log, out.log
    x = torch.randn(4096, 393, device="cuda")
    torch.testing.assert_close(load_module(out).forward(x), x.relu(), rtol=0, atol=0)
