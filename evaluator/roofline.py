"""The roofline: what a problem must at least cost, and what a device can at most do.

Two halves:
- `problem_cost(namespace)` — the minimum bytes a kernel must move (every input and every
  parameter/buffer read once, every output written once; a problem whose output ignores part
  of its inputs declares the share it needs, KJUDGE["input_read_fraction"]) and the FLOPs PyTorch's FLOP counter
  (`torch.utils.flop_counter.FlopCounterMode`) attributes to the reference. It runs the reference
  on meta tensors by default, so a 4 GB problem is analysed in milliseconds without memory.
- `measure_ceilings(device)` — the device's copy bandwidth and matmul rates, measured once per
  device and process (and cached on disk if asked); `roofline_report(...)` turns a median time
  into achieved GB/s, FLOP/s and the fraction of the roofline bound reached.

The FLOP counter only knows matmuls, convolutions and attention; elementwise work counts zero
FLOPs, which is what a roofline wants (those problems are bound by memory, not arithmetic).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, Field
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from evaluator.ceilings import Ceilings
from evaluator.result import Roofline

# ---------------------------------------------------------------------------------------------
# Problem cost


class ProblemCost(BaseModel):
    """Minimum traffic and arithmetic of one problem at the sizes it was analysed at."""

    bytes: int = Field(description="input_bytes + param_bytes + output_bytes")
    input_bytes: int = Field(description="the inputs' bytes times the problem's input_read_fraction")
    param_bytes: int = Field(description="the reference model's state_dict() tensors")
    output_bytes: int
    flops: int = Field(description="FLOPs of the reference per PyTorch's FLOP counter")
    flops_by_op: dict[str, int] = Field(default_factory=dict)
    dtype: str = Field(description="floating dtype of the largest input: picks the peak FLOP rate")
    input_shapes: list[list[int]] = Field(default_factory=list)
    output_shapes: list[list[int]] = Field(default_factory=list)
    ops: list[str] = Field(default_factory=list, description="aten operators the reference ran")
    method: str = Field(description="'meta' (shapes only) or the device the reference ran on")

    @property
    def intensity(self) -> float:
        """FLOPs per byte: left of the ridge point the problem is memory bound."""
        return self.flops / self.bytes if self.bytes else 0.0

    def to_roofline_dict(self) -> dict[str, Any]:
        """The `roofline` JSON stored with a problem (database column, API, catalog)."""
        data = self.model_dump(mode="json")
        data["intensity"] = round(self.intensity, 6)
        data["torch_version"] = torch.__version__.split("+")[0]
        return data


class _OpRecorder(TorchDispatchMode):
    """Records the names of the aten operators a forward pass dispatches (for tags)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def flatten_tensors(value: Any) -> list[torch.Tensor]:
    """Every tensor in a (nested) list/tuple/dict, in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in flatten_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in flatten_tensors(v)]
    return []


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _unique_state_bytes(model: torch.nn.Module) -> int:
    # Tied weights appear twice in state_dict() (same Parameter object) but are read once.
    seen: set[int] = set()
    total = 0
    for t in model.state_dict(keep_vars=True).values():
        if isinstance(t, torch.Tensor) and id(t) not in seen:
            seen.add(id(t))
            total += _nbytes(t)
    return total


def _dominant_dtype(tensors: Sequence[torch.Tensor]) -> str:
    floats = [t for t in tensors if t.is_floating_point()]
    if not floats:
        return "float32"
    return str(max(floats, key=_nbytes).dtype).removeprefix("torch.")


def cast_floating(value: Any, dtype: torch.dtype) -> Any:
    """Casts floating tensors (nested in lists/tuples) to `dtype`, as the evaluator does for a
    problem whose settings name a dtype."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, list | tuple):
        return type(value)(cast_floating(v, dtype) for v in value)
    return value


def build_reference(
    namespace: Mapping[str, Any], device: str | torch.device, dtype: torch.dtype | None = None
) -> tuple[torch.nn.Module, list[Any]]:
    """Builds the reference model and its inputs with every factory call on `device`."""
    with torch.device(device):
        init = list(namespace["get_init_inputs"]())
        model = namespace["Model"](*init)
        inputs = list(namespace["get_inputs"]())
    model = model.to(device)
    if dtype is not None:
        model = model.to(dtype)
        inputs = cast_floating(inputs, dtype)
    return model, inputs


def problem_cost(
    namespace: Mapping[str, Any],
    *,
    device: str | torch.device = "meta",
    dtype: torch.dtype | None = None,
) -> ProblemCost:
    """Bytes and FLOPs of the problem whose module globals are `namespace`.

    Raises whatever the problem's code raises (callers report it); on `meta` nothing is
    allocated, so sizes are the problem's real ones.
    """
    model, inputs = build_reference(namespace, device, dtype)
    return measure_cost(model, inputs, input_read_fraction(namespace))


def input_read_fraction(namespace: Mapping[str, Any]) -> float:
    """KJUDGE["input_read_fraction"] (validated by evaluator.problem.ProblemSettings), else 1."""
    settings = namespace.get("KJUDGE")
    value = settings.get("input_read_fraction", 1.0) if isinstance(settings, dict) else 1.0
    return float(value) if isinstance(value, int | float) and 0 < value <= 1 else 1.0


def measure_cost(model: torch.nn.Module, inputs: Sequence[Any], read_fraction: float = 1.0) -> ProblemCost:
    """Runs `model(*inputs)` once under the FLOP counter and sums the tensors it touches.
    `read_fraction` scales the input bytes for a problem whose output ignores part of its inputs."""
    in_tensors = flatten_tensors(list(inputs))
    counter = FlopCounterMode(display=False)
    recorder = _OpRecorder()
    with torch.no_grad(), counter, recorder:
        out = model(*inputs)
    out_tensors = flatten_tensors(out)
    by_op = {
        str(k).removeprefix("aten."): int(v) for k, v in counter.get_flop_counts().get("Global", {}).items()
    }
    input_bytes = round(read_fraction * sum(_nbytes(t) for t in in_tensors))
    param_bytes = _unique_state_bytes(model)
    output_bytes = sum(_nbytes(t) for t in out_tensors)
    devices = {t.device.type for t in in_tensors + out_tensors}
    return ProblemCost(
        bytes=input_bytes + param_bytes + output_bytes,
        input_bytes=input_bytes,
        param_bytes=param_bytes,
        output_bytes=output_bytes,
        flops=int(counter.get_total_flops()),
        flops_by_op=by_op,
        dtype=_dominant_dtype(in_tensors),
        input_shapes=[list(t.shape) for t in in_tensors],
        output_shapes=[list(t.shape) for t in out_tensors],
        ops=sorted(recorder.ops),
        method="meta" if devices == {"meta"} else ",".join(sorted(devices)) or "none",
    )


# ---------------------------------------------------------------------------------------------
# Device ceilings


def roofline_report(
    median_ms: float, bytes_moved: float, flops: float, ceilings: Ceilings, dtype: str = "float32"
) -> Roofline:
    """Achieved bandwidth and FLOP/s of a kernel that took `median_ms`, and the fraction of the
    roofline bound it reached (>1 would mean faster than the device allows: see integrity)."""
    if median_ms <= 0:
        raise ValueError(f"median_ms must be positive, got {median_ms}")
    seconds = median_ms / 1e3
    memory_s = bytes_moved / ceilings.bandwidth_bytes_per_s
    compute_s = flops / ceilings.peak_flops(dtype)
    bound_s = max(memory_s, compute_s)
    return Roofline(
        achieved_gbps=bytes_moved / seconds / 1e9,
        achieved_tflops=flops / seconds / 1e12,
        bound_ms=bound_s * 1e3,
        fraction_of_bound=bound_s / seconds,
        limiter="compute" if compute_s > memory_s else "memory",
        device=ceilings.device,
    )


def _timer(device: torch.device) -> Callable[[Callable[[], Any], int], float]:
    """Returns best-of-n seconds for a callable, with device events on GPUs."""

    def run(fn: Callable[[], Any], n: int) -> float:
        fn()  # warm-up: allocator, cuBLAS handle and heuristics
        best = math.inf
        for _ in range(n):
            if device.type == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                best = min(best, start.elapsed_time(end) / 1e3)
            else:
                t0 = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - t0)
        return best

    return run


@contextlib.contextmanager
def _tf32(enabled: bool) -> Iterator[None]:
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def _matmul_tflops(device: torch.device, dtype: torch.dtype, n: int, reps: int) -> float | None:
    try:
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        out = torch.empty(n, n, device=device, dtype=dtype)
        seconds = _timer(device)(lambda: torch.mm(a, b, out=out), reps)
    except (RuntimeError, NotImplementedError):
        return None  # the dtype has no matmul on this device (e.g. bf16 on an old GPU)
    return 2 * n**3 / seconds / 1e12


def _copy_seconds(device: torch.device, elems: int, reps: int) -> float:
    src = torch.empty(elems, device=device, dtype=torch.float32).fill_(1.0)
    dst = torch.empty_like(src)
    return _timer(device)(lambda: dst.copy_(src), reps)


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    import platform

    return platform.processor() or platform.machine() or "cpu"


def _measure(device: torch.device) -> Ceilings:
    started = time.perf_counter()
    gpu = device.type == "cuda"
    # Large enough to dwarf caches (1 GiB copied on GPUs) and launch overhead (8192^3 matmuls).
    copy_elems = (256 << 20) if gpu else (16 << 20)
    mm_n = 8192 if gpu else 512
    copy_s = _copy_seconds(device, copy_elems, 10 if gpu else 3)
    with _tf32(False):
        fp32 = _matmul_tflops(device, torch.float32, mm_n, 3)
    tf32 = None
    if gpu:
        with _tf32(True):
            tf32 = _matmul_tflops(device, torch.float32, mm_n, 5)
    half = _matmul_tflops(device, torch.float16, mm_n, 10 if gpu else 1)
    bf16 = _matmul_tflops(device, torch.bfloat16, mm_n, 10 if gpu else 1)
    if gpu:
        torch.cuda.empty_cache()
    backend = "cpu"
    if gpu:
        backend = "rocm" if getattr(torch.version, "hip", None) else "cuda"
    return Ceilings(
        device=_device_name(device),
        backend=backend,
        copy_gbps=2 * copy_elems * 4 / copy_s / 1e9,
        fp32_tflops=fp32 or 0.0,
        tf32_tflops=tf32,
        fp16_tflops=half,
        bf16_tflops=bf16,
        torch_version=torch.__version__,
        seconds=time.perf_counter() - started,
    )


_CACHE: dict[str, Ceilings] = {}


def _cache_key(device: torch.device) -> str:
    return f"{_device_name(device)}|{device.type}|torch-{torch.__version__}"


def measure_ceilings(
    device: str | torch.device = "cuda", *, cache_dir: Path | None = None, refresh: bool = False
) -> Ceilings:
    """The device's ceilings, measured once per (device model, torch version) and process.

    With `cache_dir`, results persist in `cache_dir/ceilings.json` across worker restarts.
    Takes about a second on a datacenter GPU; run it at worker start-up, not per job.
    """
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    key = _cache_key(device)
    if not refresh and key in _CACHE:
        return _CACHE[key]
    path = cache_dir / "ceilings.json" if cache_dir is not None else None
    stored: dict[str, Any] = {}
    if path is not None and path.exists():
        with contextlib.suppress(OSError, ValueError):
            stored = json.loads(path.read_text())
        if not refresh and key in stored:
            with contextlib.suppress(ValueError):
                _CACHE[key] = Ceilings.model_validate(stored[key])
                return _CACHE[key]
    if device.type == "cuda":
        with torch.cuda.device(device):
            ceilings = _measure(device)
    else:
        ceilings = _measure(device)
    _CACHE[key] = ceilings
    if path is not None:
        stored[key] = ceilings.model_dump(mode="json")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(stored, indent=2))
        tmp.replace(path)  # atomic: several workers may share the cache dir
    return ceilings


def main(argv: list[str]) -> int:
    """`python -m evaluator.roofline cuda|cpu`: measure this device, print its Ceilings as JSON."""
    if len(argv) != 1 or argv[0] not in ("cuda", "cpu"):
        print("usage: python -m evaluator.roofline cuda|cpu", file=sys.stderr)
        return 2
    print(measure_ceilings(argv[0]).model_dump_json())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
