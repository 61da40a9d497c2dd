"""Compile latency of a new candidate, per language: the lite build against the regular one.

    python bench/compile_latency.py [--samples 5] [--regular-samples 3] [--arch sm_90]
                                    [--out bench/results/compile_latency.json]

Each sample builds a source nobody built before (a constant in the kernel varies), as the
worker's compile stage does: `build_native` with its sandboxed compile child for raw `cpp`,
`cuda` and `hip` sources (HIP through HIP-on-CUDA), and the load_inline shim's plan for a
KernelBench candidate (`examples/relu/relu_kernelbench.py`'s sources), built in-process as the
ahead-of-run build does. "lite" is the default path (evaluator/build/lite.py); "regular" is the
same with KJUDGE_NO_LITE=1 (a light nvcc unit + the generated binding through g++ with the
precompiled header). One-off costs (the precompiled header, the lite runtimes) are rows of
their own and not in the samples. CUDA rows need nvcc only: code is generated for --arch.

Prediction before the H200 run (2-core host: cpp 7 s lite vs 35 s regular, sandbox included):
p50 cuda lite 3-4 s on the H200 host (nvcc on a few hundred lines: ~1.5 s of compiler, plus
the compile child's start and the link), regular 15-20 s; KernelBench lite ~3-4 s.
Headline: `p50_s` per language of the lite build, and the regular build's beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.provenance import commit  # noqa: E402
from evaluator.build import build_native, prepare_toolchain  # noqa: E402
from evaluator.build.engine import build_spec  # noqa: E402
from evaluator.build.load_inline_shim import plan_inline  # noqa: E402
from evaluator.build.toolchain import compiler_version, host_compiler, torch_info  # noqa: E402
from evaluator.result import Backend, Language, Target  # noqa: E402
from evaluator.targets import cuda  # noqa: E402

EXAMPLES = REPO / "examples" / "relu"
CPP_RELU = """#include <torch/extension.h>
torch::Tensor forward(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const float* xp = x.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) yp[i] = xp[i] > 0 ? xp[i] : 0.f * KJ_VARIANT;
  return y;
}
"""


# For the nvcc-only row: no <ATen/cuda/CUDAContext.h>, which a CPU-only PyTorch lacks.
CUDA_RELU_PLAIN = """#include <torch/extension.h>
__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.0f * KJ_VARIANT);
}
torch::Tensor forward(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
  auto y = torch::empty_like(x);
  int64_t n = x.numel();
  relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""


def _variant(source: str, k: int) -> str:
    """A distinct source: KJ_VARIANT is 0 where used; the comment makes every build new."""
    return f"#define KJ_VARIANT (0 * {k})\n// variant {k} {time.time_ns()}\n{source}"


def _kernelbench_sources() -> tuple[str, str, list[str]]:
    """(cpp_sources, cuda_sources, functions) of the KernelBench example, read by running its
    module with load_inline replaced by a recorder."""
    import torch.utils.cpp_extension as ext

    seen: dict = {}
    real = ext.load_inline
    ext.load_inline = lambda **kw: seen.update(kw)  # type: ignore[assignment]
    try:
        exec(compile((EXAMPLES / "relu_kernelbench.py").read_text(), "relu_kernelbench.py", "exec"), {})
    finally:
        ext.load_inline = real
    return seen["cpp_sources"], seen["cuda_sources"], list(seen["functions"])


def _raw(language: Language, source: str, target: Target, cache: Path):  # type: ignore[no-untyped-def]
    def build(k: int) -> tuple[bool, bool]:
        out = build_native(_variant(source, k), language, "forward", target, cache)
        return out.ok, "lite torch API" in out.log and "could not build" not in out.log

    return build


def _kernelbench(target: Target, cache: Path):  # type: ignore[no-untyped-def]
    cpp, cu, functions = _kernelbench_sources()

    def build(k: int) -> tuple[bool, bool]:
        flags: dict = dict(extra_cflags=[], extra_cuda_cflags=[], extra_ldflags=[], extra_include_paths=[])
        spec = plan_inline(
            target,
            f"relu_{k}_{time.time_ns()}",
            [cpp],
            [_variant(cu, k)],
            dict.fromkeys(functions, ""),
            **flags,
        )
        out = build_spec(spec, cache)
        return out.ok, "lite torch API" in out.log and "could not build" not in out.log

    return build


def _nvcc_unit(source: str, target: Target):  # type: ignore[no-untyped-def]
    """nvcc on the candidate's device unit alone (no link): what the lite API saves where no lite
    CUDA runtime can be built (a CPU-only PyTorch) — the lite unit against the regular light one."""
    import subprocess

    from evaluator.build.engine import _device_command
    from evaluator.build.native import plan

    def build(k: int) -> tuple[bool, bool]:
        lite = os.environ.get("KJUDGE_NO_LITE") != "1"
        spec = plan(_variant(source, k), Language.CUDA, "forward", target)
        unit = (spec.lite_units or [None])[0] if lite else spec.units[0]
        assert unit is not None
        with tempfile.TemporaryDirectory(prefix="kjudge-bench-unit-") as work:
            path = Path(work) / unit.name
            path.write_text(unit.code)
            cmd = _device_command(unit, spec, path, Path(work) / "unit.o")
            ok = subprocess.run(cmd, capture_output=True, timeout=1200).returncode == 0
        return ok, unit.lite

    return build


def _samples(name: str, build, n: int, start: int, lite: bool) -> dict:  # type: ignore[no-untyped-def]
    if lite:
        os.environ.pop("KJUDGE_NO_LITE", None)
        os.environ["KJUDGE_LITE_CUDA"] = "1"  # the path measured, whatever the default
    else:
        os.environ["KJUDGE_NO_LITE"] = "1"
    seconds, oks, lites = [], [], []
    for k in range(start, start + n):
        t = time.monotonic()
        ok, was_lite = build(k)
        seconds.append(round(time.monotonic() - t, 2))
        oks.append(ok)
        lites.append(was_lite)
    os.environ.pop("KJUDGE_NO_LITE", None)
    os.environ.pop("KJUDGE_LITE_CUDA", None)
    return {
        "name": name,
        "path": "lite" if lite else "regular",
        "samples_s": seconds,
        "p50_s": round(statistics.median(seconds), 2),
        "ok": all(oks),
        # A lite row whose builds went the regular way: no lite runtime for this flavour here
        # (the CUDA one needs a CUDA build of PyTorch), so its seconds are the regular path's.
        "built_lite": all(lites) if lite else not any(lites),
    }


def _ahead_rows(cache: Path, n: int) -> list[dict]:
    """What the ahead-of-run child of a KernelBench candidate costs besides its compiler
    (evaluator.api.prebuild on the CPU target, the candidate's build already cached, so only the
    sandboxed import is timed), against the stand-in torch and against the real one. With a new
    build the compiler's own spread (+-1 s of ~25 s for this regular C++ build) hides the import."""
    from unittest import mock

    from evaluator import api
    from evaluator.options import EvalOptions, Submission
    from evaluator.problem import Problem

    problem = Problem.from_file(EXAMPLES / "problem.py")
    case = (REPO / "tests" / "evaluator" / "cases" / "kb_load_inline_cpp.py").read_text()
    home_cache = cache / "ahead-home"
    prepare_toolchain(home_cache / "native")  # one-off, as for the other rows: not in the samples
    options = EvalOptions(device="cpu", cache_dir=home_cache)
    subs = [
        Submission(
            source=case.replace(
                "auto in = x.contiguous();", f"auto in = x.contiguous();  // {k} {time.time_ns()}", 1
            ),
            language=Language.KERNELBENCH,
        )
        for k in range(n)
    ]
    for sub in subs:
        assert api.prebuild(problem, sub, options).built  # the build itself, not timed
    rows = []
    for path, stub in (("stand-in torch", True), ("real torch", False)):
        seconds, oks = [], []
        for sub in subs:
            patch = (
                mock.patch.object(api, "_stub_facts", lambda target: None)
                if not stub
                else contextlib.nullcontext()
            )
            t = time.monotonic()
            with patch:
                outcome = api.prebuild(problem, sub, options)
            seconds.append(round(time.monotonic() - t, 2))
            oks.append(outcome.built and ("under the stand-in torch" in outcome.log) == stub)
        rows.append(
            {
                "name": "kernelbench ahead child, build cached",
                "path": path,
                "samples_s": seconds,
                "p50_s": round(statistics.median(seconds), 2),
                "ok": all(oks),
                "built_lite": True,
            }
        )
        print(rows[-1], flush=True)
    return rows


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
    parser.add_argument("--samples", type=int, default=5, help="lite builds per language")
    parser.add_argument(
        "--regular-samples", type=int, default=3, help="regular builds per language (0: none)"
    )
    parser.add_argument(
        "--only",
        help="comma-separated rows: cpp,cuda,hip,kernelbench,cuda-unit,ahead (default: all nvcc allows)",
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "compile_latency.json")
    args = parser.parse_args()

    cpu = Target(backend=Backend.CPU, arch=platform.machine(), device="cpu")
    gpu = Target(backend=Backend.CUDA, arch=args.arch, device=f"{args.arch} (code generation only)")
    load_before = os.getloadavg()
    rows: list[dict] = []
    one_off: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="kjudge-bench-cache-") as cache_name:
        cache = Path(cache_name)
        t = time.monotonic()
        prepare_toolchain(cache, Backend.CUDA if cuda.cuda_home() else None)
        one_off["precompiled header + lite runtimes"] = round(time.monotonic() - t, 2)
        cases = [("cpp", _raw(Language.CPP, CPP_RELU, cpu, cache))]
        if cuda.cuda_home() is not None:
            cuda_src = (EXAMPLES / "relu_cuda.cu").read_text().replace("0.0f)", "0.0f * KJ_VARIANT)")
            hip_src = (EXAMPLES / "relu_hip.hip").read_text()
            cases += [
                ("cuda", _raw(Language.CUDA, cuda_src, gpu, cache)),
                ("hip (HIP-on-CUDA)", _raw(Language.HIP, hip_src, gpu, cache)),
                ("kernelbench (load_inline)", _kernelbench(gpu, cache)),
                ("cuda-unit (nvcc only, no link)", _nvcc_unit(CUDA_RELU_PLAIN, gpu)),
            ]
        if args.only:
            wanted = {w.strip() for w in args.only.split(",")}
            cases = [(n, b) for n, b in cases if n.split()[0] in wanted]
        for name, build in cases:
            rows.append(_samples(name, build, args.samples, 0, lite=True))
            if args.regular_samples:
                rows.append(_samples(name, build, args.regular_samples, 100, lite=False))
            print(rows[-2] if args.regular_samples else rows[-1], flush=True)
        if not args.only or "ahead" in {w.strip() for w in args.only.split(",")}:
            rows += _ahead_rows(cache, args.samples)
    load_after = os.getloadavg()

    info = torch_info()
    headline = {
        f"{r['name']} {r['path']} p50_s": r["p50_s"]
        for r in rows
        if r["built_lite"] or r["path"] == "regular"
    }
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
        "device": f"compile host only; CUDA rows generate {args.arch} code",
        "toolchain": {
            "torch": info.version,
            "cxx": compiler_version(host_compiler()),
            "nvcc": compiler_version(cuda.nvcc_path()) if cuda.cuda_home() else None,
            "cxx_std": info.cxx_std,
        },
        "workload": "ReLU per language, a new source each sample; wall seconds of one build on an otherwise idle host",
        "one_off_s": one_off,
        "headline": headline,
        "rows": rows,
    }
    width = max(len(r["name"]) for r in rows)
    print(f"{'build':<{width}}  path     p50 s  samples")
    for r in rows:
        print(
            f"{r['name']:<{width}}  {r['path']:<7}  {r['p50_s']:5.1f}  {r['samples_s']}  ok={r['ok']} lite={r['built_lite']}"
        )
    print(f"one-off: {one_off}")
    print(
        f"host: {result['host']['cpu']} x{result['host']['cores']}, load {load_before[0]:.1f} -> {load_after[0]:.1f}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
