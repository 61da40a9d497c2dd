"""Compile a Triton candidate's kernels ahead of its run, without a device.

Triton compiles a kernel when it is first launched: in the run, on the GPU's clock (3.7-4.0 s of
a Triton candidate's 3.9-4.1 s GPU stage on the H100). `python -m evaluator.build.triton_ahead
JOB.json` runs in a sandbox with no GPU: it points Triton at the run's target through a stand-in
driver, turns every launch into Triton's own `warmup` (compile, never launch), and calls the
candidate's `forward` once on the problem's inputs made on the meta device (shapes, dtypes and
aligned pointers, no memory). Triton writes each compiled kernel to TRITON_CACHE_DIR, where the
run's JIT, keyed by the same source, specialization, options and target, finds it.

Nothing is decided here: a candidate that fails this way (it touches the GPU itself, calls
torch on data, autotunes on measured times) is compiled by its run as before, and whatever it
did wrong the run meets again and reports. The candidate imports under the module name the run
gives it (Triton's cache key holds the kernel's qualified name).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evaluator.build.ahead import MODULE_NAME

PROBLEM_MODULE = "kjudge_problem"


class TritonAheadJob(BaseModel):
    candidate_path: Path
    problem_path: Path
    dtype: str | None = None  # the problem's dtype setting: floating inputs and the model cast to it
    capability: int  # the run's compute capability as Triton writes it: 90 for sm_90
    report_path: Path


class TritonAheadReport(BaseModel):
    launches: int = 0  # kernel launches turned into compiles (a cached kernel counts too)
    seconds: float = 0.0
    error: str | None = None  # why the forward did not finish: the run compiles what is left


def capability(arch: str) -> int | None:
    """`sm_90` → 90 (`sm_90a` too: Triton's target is the capability); None for anything else."""
    digits = arch.removeprefix("sm_").rstrip("a")
    return int(digits) if arch.startswith("sm_") and digits.isdigit() else None


class _NoDevice:
    """Triton's driver interface as far as compiling needs it, for a target with no device here."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def get_current_target(self) -> Any:
        return self.target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_benchmarker(self) -> Any:
        # An autotuner "times" each config once: every config is compiled, the first is kept
        # (the run autotunes for itself, on its device, and finds them all compiled).
        def bench(fn: Any, quantiles: Any = None, **_: Any) -> Any:
            fn()
            return [1.0] * len(quantiles) if quantiles else 1.0

        return bench


def run_job(job_path: Path) -> int:
    job = TritonAheadJob.model_validate_json(job_path.read_text())
    report = TritonAheadReport()
    started = time.monotonic()
    try:
        _compile_forward(job, report)
    except BaseException as exc:  # noqa: BLE001 - whatever the candidate raised, the run meets it
        report.error = f"{type(exc).__name__}: {str(exc)[:300]}"
    report.seconds = round(time.monotonic() - started, 3)
    job.report_path.write_text(report.model_dump_json())
    return 0


def _compile_forward(job: TritonAheadJob, report: TritonAheadReport) -> None:
    import torch
    from triton.backends.compiler import GPUTarget
    from triton.runtime import jit
    from triton.runtime.driver import driver

    driver.set_active(_NoDevice(GPUTarget("cuda", job.capability, 32)))
    launch = jit.JITFunction.run

    def compile_only(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        report.launches += 1
        return launch(self, *args, grid=grid, warmup=True, **kwargs)

    jit.JITFunction.run = compile_only  # type: ignore[method-assign]
    problem = _import(PROBLEM_MODULE, job.problem_path)
    module = _import(MODULE_NAME, job.candidate_path)
    dtype = getattr(torch, job.dtype) if job.dtype else None

    def cast(value: Any) -> Any:
        floating = isinstance(value, torch.Tensor) and value.is_floating_point()
        return value.to(dtype) if floating and dtype is not None else value

    # As the run makes them (evaluator/runner.py), on the meta device: no memory, no data.
    with torch.device("meta"), torch.no_grad():
        model = module.ModelNew(*problem.get_init_inputs())
        if dtype is not None:
            model = model.to(dtype)
        model(*[cast(x) for x in problem.get_inputs()])


def _import(name: str, path: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m evaluator.build.triton_ahead JOB.json")
    sys.exit(run_job(Path(sys.argv[1])))
