"""evaluator.roofline: problem cost on meta tensors, device ceilings, the roofline report."""

from __future__ import annotations

import json

import pytest
import torch

from evaluator import roofline as R
from problems.catalog import get_builtin
from problems.loader import load_namespace


def _ns(name: str, small: bool = False) -> dict:
    problem = get_builtin(name)
    return load_namespace(problem.source, name, small=small)


def test_matmul_cost_is_exact() -> None:
    cost = R.problem_cost(_ns("matmul_square"))
    n = 4096
    assert cost.flops == 2 * n**3
    assert cost.input_bytes == 2 * n * n * 4 and cost.output_bytes == n * n * 4 and cost.param_bytes == 0
    assert cost.bytes == 3 * n * n * 4
    assert cost.method == "meta" and cost.dtype == "float32" and cost.ops == ["mm"]


def test_parameters_count_once_and_meta_matches_cpu() -> None:
    meta = R.problem_cost(_ns("mlp", small=True))
    cpu = R.problem_cost(_ns("mlp", small=True), device="cpu")
    # (16*32 + 32) + (32*32 + 32) + (32*8 + 8) fp32 parameters
    assert meta.param_bytes == ((16 * 32 + 32) + (32 * 32 + 32) + (32 * 8 + 8)) * 4
    assert meta.bytes == cpu.bytes and meta.flops == cpu.flops and cpu.method == "cpu"
    assert meta.flops == 2 * 4 * (16 * 32 + 32 * 32 + 32 * 8)


def test_tied_weights_are_read_once() -> None:
    class Tied(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Linear(8, 8, bias=False)
            self.b = torch.nn.Linear(8, 8, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(self.a(x))

    cost = R.measure_cost(Tied(), [torch.randn(2, 8)])
    assert cost.param_bytes == 8 * 8 * 4


def test_dtype_setting_changes_bytes() -> None:
    ns = _ns("relu", small=True)
    fp32 = R.problem_cost(ns)
    half = R.problem_cost(ns, dtype=torch.float16)
    assert half.bytes * 2 == fp32.bytes and half.dtype == "float16"


def _ceilings(**kw: float) -> R.Ceilings:
    values = {"device": "test", "backend": "cuda", "copy_gbps": 3000.0, "fp32_tflops": 50.0,
              "tf32_tflops": 400.0, "fp16_tflops": 700.0, "bf16_tflops": 720.0} | kw  # fmt: skip
    return R.Ceilings(**values)


def test_roofline_report_memory_bound() -> None:
    c = _ceilings()
    # 3 GB at 3000 GB/s is 1 ms; measured 2 ms -> half the bound, 1500 GB/s achieved.
    r = R.roofline_report(2.0, 3e9, 0, c)
    assert r.limiter == "memory"
    assert r.bound_ms == pytest.approx(1.0)
    assert r.fraction_of_bound == pytest.approx(0.5)
    assert r.achieved_gbps == pytest.approx(1500.0)


def test_roofline_report_compute_bound_uses_the_dtype_rate() -> None:
    c = _ceilings()
    # 1.4e12 FLOP of fp16 at 700 TFLOP/s = 2 ms; fp32 work may use TF32 (400 TFLOP/s) = 3.5 ms.
    half = R.roofline_report(4.0, 1e6, 1.4e12, c, "float16")
    assert (
        half.limiter == "compute"
        and half.bound_ms == pytest.approx(2.0)
        and half.fraction_of_bound == pytest.approx(0.5)
    )
    fp32 = R.roofline_report(7.0, 1e6, 1.4e12, c, "float32")
    assert fp32.bound_ms == pytest.approx(3.5) and fp32.achieved_tflops == pytest.approx(200.0)
    assert c.max_flops() == 720e12
    assert _ceilings(tf32_tflops=None).peak_flops("float32") == 50e12
    with pytest.raises(ValueError):
        R.roofline_report(0.0, 1, 1, c)


def test_measure_ceilings_on_cpu_is_cached(tmp_path) -> None:
    first = R.measure_ceilings("cpu", cache_dir=tmp_path)
    assert first.backend == "cpu" and first.copy_gbps > 0 and first.fp32_tflops > 0
    assert R.measure_ceilings("cpu", cache_dir=tmp_path) is first  # in-process cache
    stored = json.loads((tmp_path / "ceilings.json").read_text())
    (key,) = stored
    assert stored[key]["copy_gbps"] == first.copy_gbps
    R._CACHE.clear()  # a new worker process: the file answers without measuring
    again = R.measure_ceilings("cpu", cache_dir=tmp_path)
    assert again.measured_at == first.measured_at


@pytest.mark.gpu
def test_measure_ceilings_on_gpu_is_plausible() -> None:
    c = R.measure_ceilings("cuda", refresh=True)
    assert c.backend in ("cuda", "rocm")
    # A datacenter GPU: > 500 GB/s copy, fp16 matmuls faster than fp32 ones.
    assert c.copy_gbps > 500
    assert c.fp16_tflops is not None and c.fp16_tflops > c.fp32_tflops
    assert c.seconds < 30
