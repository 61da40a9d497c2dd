"""Compile latency of kjudge's native builds, per build shape.

    python bench/compile_latency.py [--baseline] [--arch sm_90] [--out bench/results/compile_latency.json]

Every row compiles a small ReLU extension (one kernel + a generated pybind11 binding) from an
empty module cache, in this process (no sandbox), with all cores:
- cpp, no PCH:               g++ -O2 parsing <torch/extension.h> itself
- precompiled header build:  the shared torch/extension.h.gch, built once per toolchain
- cpp, cached PCH:           the same cpp unit with the .gch
- cuda cold (light + PCH):   nvcc unit against <torch/types.h> ‖ binding unit with the .gch
- hip-on-cuda cold:          the same, after HIP -> CUDA translation
- cuda, one unit, full header (--baseline): roughly what load_inline does (nvcc parses
                             <torch/extension.h> and pybind11); slow, hence optional
- cache hit:                 build_native for an already-built source
CUDA rows need nvcc only (no GPU): code is generated for --arch. Before measuring on the 2-core
CI box we predicted ~30 s (cpp no PCH), ~45 s (PCH build), ~13 s (cpp with PCH), ~31 s (cuda
light: nvcc-bound), ~90 s (one unit, full header), <1 s (cache hit).
Prints a table and writes the JSON (host, device, date, commit, load average, rows).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.provenance import commit  # noqa: E402
from evaluator.build import build_native, prepare_toolchain  # noqa: E402
from evaluator.build.engine import compile_to  # noqa: E402
from evaluator.build.native import plan  # noqa: E402
from evaluator.build.pch import find_pch  # noqa: E402
from evaluator.build.toolchain import compiler_version, host_compiler, torch_info  # noqa: E402
from evaluator.result import Backend, Language, Target  # noqa: E402
from evaluator.targets import cuda  # noqa: E402

CPP_RELU = """#include <torch/extension.h>
torch::Tensor forward(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const float* xp = x.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) yp[i] = xp[i] > 0 ? xp[i] : 0.f;
  return y;
}
"""

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

HIP_RELU = """#include <torch/extension.h>
#include <hip/hip_runtime.h>
__global__ void relu_kernel(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
torch::Tensor forward(torch::Tensor x) {
  auto y = torch::empty_like(x);
  int n = x.numel();
  hipLaunchKernelGGL(relu_kernel, dim3((n + 255) / 256), dim3(256), 0, 0, x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""


def _timed_compile(
    name: str, source: str, language: Language, target: Target, pch_dir: Path | None, *, merged: bool = False
) -> dict:
    spec = plan(source, language, "forward", target)
    if merged and spec.fallback_units is not None:
        spec = spec.model_copy(update={"units": spec.fallback_units, "fallback_units": None})
    with tempfile.TemporaryDirectory(prefix="kjudge-bench-") as work:
        start = time.monotonic()
        out = compile_to(spec, Path(work), pch_dir=pch_dir, timeout_s=1200)
        seconds = time.monotonic() - start
    if not out.ok:
        print(out.log[-3000:], file=sys.stderr)
    return {"name": name, "seconds": round(seconds, 2), "ok": out.ok, "units": [u.name for u in spec.units]}


def _row(name: str, fn) -> dict:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    ok = fn()
    return {"name": name, "seconds": round(time.monotonic() - start, 2), "ok": bool(ok)}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_90", help="NVIDIA arch to generate code for (default sm_90)")
    parser.add_argument(
        "--baseline", action="store_true", help="also time one nvcc unit with the full header"
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "compile_latency.json")
    args = parser.parse_args()

    cpu = Target(backend=Backend.CPU, arch=platform.machine(), device="cpu")
    gpu = Target(backend=Backend.CUDA, arch=args.arch, device=f"{args.arch} (code generation only)")
    load_before = os.getloadavg()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="kjudge-bench-cache-") as cache_name:
        cache = Path(cache_name)
        rows.append(_timed_compile("cpp, no PCH", CPP_RELU, Language.CPP, cpu, None))
        rows.append(
            _row(
                "precompiled header build (once per toolchain)",
                lambda: prepare_toolchain(cache) and find_pch(cache, host_compiler()),
            )
        )
        pch_dir = find_pch(cache, host_compiler())
        rows.append(_timed_compile("cpp, cached PCH", CPP_RELU, Language.CPP, cpu, pch_dir))
        have_nvcc = cuda.cuda_home() is not None
        if have_nvcc:
            rows.append(
                _timed_compile(
                    f"cuda cold ({args.arch}; light nvcc unit + PCH binding)",
                    CUDA_RELU,
                    Language.CUDA,
                    gpu,
                    pch_dir,
                )
            )
            rows.append(
                _timed_compile(f"hip-on-cuda cold ({args.arch})", HIP_RELU, Language.HIP, gpu, pch_dir)
            )
            if args.baseline:
                rows.append(
                    _timed_compile(
                        f"cuda, one nvcc unit with full torch/extension.h ({args.arch})",
                        CUDA_RELU,
                        Language.CUDA,
                        gpu,
                        pch_dir,
                        merged=True,
                    )
                )
        built = build_native(CPP_RELU, Language.CPP, "forward", cpu, cache, sandboxed=False)
        rows.append(
            _row(
                "cache hit (build_native, same source)",
                lambda: build_native(CPP_RELU, Language.CPP, "forward", cpu, cache).cached and built.ok,
            )
        )
    load_after = os.getloadavg()

    info = torch_info()
    result = {
        "bench": "compile_latency",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "host": {
            "name": platform.node(),
            "cpu": _cpu_model(),
            "cores": os.cpu_count(),
            "loadavg_before": load_before,
            "loadavg_after": load_after,
        },
        "device": f"none (CPU host); CUDA rows generate {args.arch} code without a GPU",
        "toolchain": {
            "torch": info.version,
            "cxx": compiler_version(host_compiler()),
            "nvcc": compiler_version(cuda.nvcc_path()) if cuda.cuda_home() else None,
            "cxx_std": info.cxx_std,
        },
        "workload": "ReLU extension: one kernel/loop + generated pybind11 binding; wall seconds, single run each",
        "rows": rows,
    }
    width = max(len(r["name"]) for r in rows)
    print(f"{'build':<{width}}  seconds  ok")
    for r in rows:
        print(f"{r['name']:<{width}}  {r['seconds']:7.1f}  {r['ok']}")
    print(
        f"host: {result['host']['cpu']} x{result['host']['cores']}, load {load_before[0]:.1f} -> {load_after[0]:.1f}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
