"""The profile child: `python -m evaluator.profile_child JOB.json`, run under a profiler.

After a `correct` verdict the parent (evaluator/profiling/run.py) starts this module under ncu
or rocprofv3, in the same sandbox a run gets. It loads the problem and the candidate the way
the run child does (evaluator.runner's Runner, whose loading steps it reuses), calls the
candidate a few times to warm it up (first-call work: lazy module loading, Triton compiles,
cuBLAS heuristics), then opens the profiled window — cudaProfilerStart (what
`ncu --profile-from-start off` waits for) and a NVTX/ROCTx range named `PROFILE_RANGE` (what
the rocprofv3 parser keeps) — calls the candidate `calls` times on inputs made before the
window, synchronizes and closes it. Nothing else runs inside the window: no input generation,
no reference, no L2 flush, no checking.

The report (ProfileChildReport, a JSON file in scratch) says only whether that worked; the
numbers come from the profiler's own output, which the parent reads.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evaluator.runner import RunJob, Runner, Stop, exception_line

PROFILE_RANGE = "kjudge_profile"
USAGE = "usage: python -m evaluator.profile_child JOB.json"


class ProfileJob(BaseModel):
    run: RunJob  # the run's job: problem, candidate, build, device, seed
    calls: int = 1
    warmup_calls: int = 2
    report_path: Path


class ProfileChildReport(BaseModel):
    ok: bool
    message: str | None = None
    calls: int = 0
    device: str | None = None


def _runner(job: RunJob) -> Runner:
    """A Runner set up as its own run does before loading the candidate (its setup phase)."""
    import torch

    runner = Runner(job)
    runner.torch = torch
    runner.dev = job.device
    runner.sync = torch.cuda.synchronize if job.device == "cuda" else (lambda: None)
    runner.dtype = getattr(torch, job.settings.dtype) if job.settings.dtype else None
    runner.problem = runner._import_problem()
    runner.init_inputs, runner.reference = runner._build_reference()
    return runner


class _Window:
    """The profiled window: cudaProfilerStart/Stop and a named NVTX (ROCTx on ROCm) range. Each
    is best effort: a profiler that uses the other one still finds its own."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def __enter__(self) -> None:
        cuda = self.torch.cuda
        with contextlib.suppress(Exception):  # no NVTX/ROCTx library: ncu does not need it
            cuda.nvtx.range_push(PROFILE_RANGE)
        _profiler_call(cuda, "start")

    def __exit__(self, *exc: object) -> None:
        cuda = self.torch.cuda
        _profiler_call(cuda, "stop")
        with contextlib.suppress(Exception):
            cuda.nvtx.range_pop()


def _profiler_call(cuda: Any, what: str) -> None:
    """cudaProfilerStart/Stop through torch, else the driver's cuProfilerStart/Stop (what ncu
    intercepts either way). Best effort: rocprofv3 does not need it."""
    try:
        getattr(cuda.profiler, what)()
        return
    except Exception:  # noqa: BLE001
        pass
    with contextlib.suppress(Exception):
        getattr(ctypes.CDLL("libcuda.so.1"), "cuProfilerStart" if what == "start" else "cuProfilerStop")()


def profile(job: ProfileJob) -> ProfileChildReport:
    runner = _runner(job.run)
    torch = runner.torch
    device = torch.cuda.get_device_name(0) if job.run.device == "cuda" else None
    fn = runner._load_candidate()
    inputs = runner.make_inputs(job.run.seed)
    with torch.no_grad():
        for _ in range(job.warmup_calls):
            fn(*inputs)
        runner.sync()
        with _Window(torch):
            for _ in range(job.calls):
                fn(*inputs)
            runner.sync()
    return ProfileChildReport(ok=True, calls=job.calls, device=device)


def run_job(path: Path) -> int:
    job = ProfileJob.model_validate_json(path.read_text())
    started = time.perf_counter()
    try:
        report = profile(job)
    except Stop as stop:
        report = ProfileChildReport(ok=False, message=stop.message)
    except Exception as exc:  # noqa: BLE001  the candidate (or the problem) failed this time
        traceback.print_exc()
        report = ProfileChildReport(ok=False, message=f"the profiled run raised {exception_line(exc)}")
    print(f"[kjudge] profile child done in {time.perf_counter() - started:.2f} s", file=sys.stderr)
    tmp = job.report_path.with_suffix(".tmp")
    tmp.write_text(report.model_dump_json())
    tmp.replace(job.report_path)
    # Unlike the runner, a normal exit: rocprofv3 writes its files in the process's exit
    # handlers (and ncu's injection says goodbye there). The candidate's own exit handlers run
    # too; one that hangs is stopped by the sandbox's wall clock, and the parent still reads
    # what the profiler wrote. The verdict was decided before this process started.
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    return run_job(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
