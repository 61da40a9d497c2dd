"""On an NVIDIA GPU: HIP through HIP-on-CUDA computes the right numbers, and so do the CUDA path
and the KernelBench HIP example through the load_inline shim. Skipped without a GPU."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest
import torch

from evaluator.build import build_native, install_load_inline_shim, load_module
from evaluator.result import Language, Target

from ._support import REPO, SAMPLES, requires_cuda_gpu

pytestmark = [pytest.mark.gpu, requires_cuda_gpu]

CUDA_RELU = """#include <torch/extension.h>
__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
torch::Tensor forward(torch::Tensor x) {
  auto y = torch::empty_like(x);
  int64_t n = x.numel();
  relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""


def test_hip_api_subset_is_correct_on_cuda(build_cache: Path, device_target: Target) -> None:
    out = build_native(
        (SAMPLES / "hip_api_subset.hip").read_text(), Language.HIP, "forward", device_target, build_cache
    )
    assert out.ok, out.log
    module = load_module(out)
    torch.manual_seed(0)
    n = 100_003  # not a multiple of the block size
    x = torch.randn(n, device="cuda")
    got = module.forward(x)
    torch.cuda.synchronize()
    assert got.shape == (3 * n + 1,)
    torch.testing.assert_close(got[:n], x.relu(), rtol=0, atol=0)
    torch.testing.assert_close(got[n : 2 * n], x.bfloat16().float() * 2, rtol=0, atol=0)
    torch.testing.assert_close(got[2 * n : 3 * n], (x.half() + 1).float(), rtol=0, atol=0)
    torch.testing.assert_close(got[3 * n], x.sum(), rtol=1e-4, atol=1e-2)


def test_hip_with_pytorch_hip_stream_names_is_correct_on_cuda(
    build_cache: Path, device_target: Target
) -> None:
    out = build_native(
        (SAMPLES / "hip_torch_stream.hip").read_text(), Language.HIP, "forward", device_target, build_cache
    )
    assert out.ok, out.log
    module = load_module(out)
    x = torch.randn(4097, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # the kernel must run on PyTorch's current stream
        y = module.forward(x)
    side.synchronize()
    torch.testing.assert_close(y, x * 3 + 1)


def test_cuda_source_is_correct_after_the_worker_prepared(build_cache: Path, device_target: Target) -> None:
    from evaluator.build import prepare_toolchain

    prepare_toolchain(build_cache)  # a worker does this at start-up
    start = time.monotonic()
    out = build_native(CUDA_RELU, Language.CUDA, "forward", device_target, build_cache)
    cold = time.monotonic() - start
    assert out.ok, out.log
    print(f"cuda relu cold build on {device_target.device}: {cold:.1f} s")
    module = load_module(out)
    x = torch.randn(1 << 20, device="cuda")
    torch.testing.assert_close(module.forward(x), x.relu(), rtol=0, atol=0)
    # How fast is bench/eval_latency.py's question (a timed assertion here would measure the
    # other tests compiling beside it), not this test's.


def test_kernelbench_hip_example_through_the_shim(
    build_cache: Path, device_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torch.utils import cpp_extension

    monkeypatch.setattr(cpp_extension, "load_inline", cpp_extension.load_inline)  # restored afterwards
    monkeypatch.setattr(cpp_extension, "load", cpp_extension.load)
    monkeypatch.setenv("CXX", "")  # the candidate sets CXX=hipcc; restored after the test
    install_load_inline_shim(device_target, build_cache)
    path = REPO / "examples" / "relu" / "relu_kernelbench_hip.py"
    spec = importlib.util.spec_from_file_location("kjudge_test_relu_kernelbench_hip", path)
    assert spec is not None and spec.loader is not None
    candidate = importlib.util.module_from_spec(spec)
    start = time.monotonic()
    spec.loader.exec_module(candidate)  # calls load_inline with HIP in cpp_sources, CXX=hipcc
    print(f"kernelbench HIP relu build on {device_target.device}: {time.monotonic() - start:.1f} s")
    sys.modules.pop("kjudge_test_relu_kernelbench_hip", None)
    model = candidate.ModelNew().cuda()
    x = torch.randn(16, 16384, device="cuda")
    torch.testing.assert_close(model(x), torch.relu(x), rtol=0, atol=0)
