"""In the parent: profile a correct candidate's kernels, after its run, in the sandbox.

`profile_candidate` never raises and never changes the verdict or the timing: whatever goes
wrong (a CPU target, no profiler installed, counters the driver keeps to administrators, a
candidate that fails or hangs under the profiler, kjudge's own bug) becomes a Profile with
`available: false` and a message. The profiler runs as a separate sandboxed child after the run
child has exited, with its own wall-clock limit, so the profile costs the evaluation time but
no timing accuracy.

The profile is advice for the author, not a measurement kjudge stands behind: the profiler's
output file is written inside the candidate's sandbox, so a hostile candidate could forge it.
Nothing (verdict, speedup, leaderboard, integrity) reads it.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from evaluator.profile_child import PROFILE_RANGE, ProfileChildReport, ProfileJob
from evaluator.profiling import ncu, rocprof
from evaluator.profiling.bottleneck import kernel_bound, summarize
from evaluator.profiling.files import read_untrusted
from evaluator.profiling.models import Profile
from evaluator.result import Backend, Roofline, Target
from evaluator.runner import RunJob
from evaluator.sandbox import Limits, SandboxRun, describe, run_sandboxed

MAX_KERNELS = 10  # listed in the Result; the bottleneck line speaks of the first
NCU_CALLS = 1  # ncu replays every kernel per counter pass: one call is already ~40 runs of it
ROCPROF_CALLS = 3


def profile_candidate(
    job: RunJob,
    target: Target,
    *,
    scratch: Path,
    env: dict[str, str],
    timeout_s: float,
    readonly_paths: Sequence[Path] = (),
    writable_paths: Sequence[Path] = (),
    roofline: Roofline | None = None,
    median_ms: float | None = None,
) -> Profile:
    started = time.monotonic()
    try:
        profile = _profile(
            job, target, scratch, env, timeout_s, readonly_paths, writable_paths, roofline, median_ms
        )
    except Exception:  # noqa: BLE001  advisory: kjudge's own failure here must not fail the evaluation
        tail = traceback.format_exc().strip().splitlines()[-1]
        profile = Profile.unavailable(f"profiling failed inside kjudge: {tail[:300]}")
    profile.seconds = round(time.monotonic() - started, 3)
    return profile


def not_profiled(verdict: str | None) -> Profile:
    """For a requested profile that did not run because the verdict was not `correct`."""
    return Profile.unavailable(
        f"only a correct candidate is profiled; this evaluation ended {verdict or 'without a verdict'}"
    )


def _profile(
    job: RunJob,
    target: Target,
    scratch: Path,
    env: dict[str, str],
    timeout_s: float,
    readonly_paths: Sequence[Path],
    writable_paths: Sequence[Path],
    roofline: Roofline | None,
    median_ms: float | None,
) -> Profile:
    if target.backend is Backend.CPU:
        return Profile.unavailable(
            "no hardware profile on the cpu target: profiling needs an NVIDIA GPU (Nsight Compute) "
            "or an AMD GPU (rocprofv3); the verdict and timing are unaffected"
        )
    nvidia = target.backend is Backend.CUDA
    tool = ncu.find_ncu() if nvidia else rocprof.find_rocprofv3()
    if tool is None:
        name, var = ("ncu (Nsight Compute)", ncu.NCU_ENV) if nvidia else ("rocprofv3", rocprof.ROCPROF_ENV)
        return Profile.unavailable(
            f"{name} was not found on this worker (PATH, the CUDA/ROCm toolkit); the operator can "
            f"install it or point {var} at it"
        )
    calls = NCU_CALLS if nvidia else ROCPROF_CALLS
    pjob = ProfileJob(
        run=job.model_copy(
            update={
                "report_path": scratch / "profile-run-report.json",
                "phase_path": scratch / "profile-phase",
                "baselines": [],
                "measure_timing": False,
            }
        ),
        calls=calls,
        report_path=scratch / "profile-report.json",
    )
    job_path = scratch / "profile-job.json"
    job_path.write_text(pjob.model_dump_json())
    child = [sys.executable, "-m", "evaluator.profile_child", str(job_path)]
    limits = Limits(wall_s=timeout_s, cpu_s=int(timeout_s * 8) + 60)
    device = target.device
    complete = True  # every launch in the window was profiled (the overhead note needs that)

    def sandboxed(argv: list[str], extra_ro: Path) -> SandboxRun:
        # extra_ro: the profiler's install tree (a symlinked /opt/rocm resolves elsewhere)
        _clear(pjob.report_path)
        return run_sandboxed(
            argv,
            scratch=scratch,
            limits=limits,
            gpu=True,
            env=env,
            readonly_paths=[*readonly_paths, extra_ro],
            writable_paths=list(writable_paths),
        )

    notes: list[str] = []
    errors = ""
    if nvidia:
        log_path = scratch / ncu.LOG_NAME
        _clear(log_path)
        run = sandboxed(ncu.command(tool, child, log_path), ncu.install_dir(tool))
        out = _ncu_output(log_path, run)
        if not out.kernels and ncu.unknown_metric(out.errors) and not run.refused:
            # This ncu or GPU lacks one of the metrics: the core ones alone, once more.
            run = sandboxed(ncu.command(tool, child, log_path, ncu.CORE_METRICS), ncu.install_dir(tool))
            out = _ncu_output(log_path, run)
            notes.append("this ncu refused the full metric list; core metrics only (no stall reasons)")
        kernels, launches, profiler = out.kernels, out.launches, ncu.ncu_version(tool)
        errors = ncu.explain_errors(out.errors, run.stdout + run.stderr)
        if launches >= ncu.LAUNCH_COUNT:
            complete = False
            notes.append(f"only the first {ncu.LAUNCH_COUNT} kernel launches were profiled")
    else:
        run, rout = _rocprof_run(sandboxed, tool, child, scratch / "rocprof", rocprof.counters(), target)
        first = _child_report(pjob.report_path)
        if (
            not rout.kernels
            and (first is None or first.ok)  # not the candidate's own failure
            and not (run.refused or run.timed_out or run.killed_reason)
        ):
            # rocprofv3 refuses a counter set it cannot collect (in one pass, on this GPU): the
            # kernel trace alone still gives names, durations, registers and LDS.
            run, rout = _rocprof_run(sandboxed, tool, child, scratch / "rocprof-trace", [], target)
            notes.append("rocprofv3 refused the counters; kernel trace only")
        kernels, launches, profiler = rout.kernels, rout.launches, "rocprofv3"
        if kernels and not rout.window_found:
            notes.append("rocprofv3 recorded no ROCTx range: every kernel of the profiled process is listed")
    if run.refused:
        return Profile.unavailable(run.refused)
    report = _child_report(pjob.report_path)
    stopped = describe(run, limits) if (run.timed_out or run.killed_reason) else None
    if kernels and (report is None or report.ok):
        if stopped:
            # the profiler wrote its numbers before the end (a candidate's exit handler hung)
            notes.append(f"the profiled process was then {stopped.removeprefix('killed: ')}")
        timed = median_ms if complete else None
        for k in kernels:
            k.bound = kernel_bound(k)
        return Profile(
            available=True,
            profiler=profiler,
            device=device,
            calls=calls,
            kernels=kernels[:MAX_KERNELS],
            kernels_seen=launches,
            bottleneck=summarize(kernels, roofline, median_ms=timed, calls=calls),
            message="; ".join(notes) or None,
        )
    if stopped:
        message = f"the profiled run was {stopped.removeprefix('killed: ')}"
    elif report is not None and not report.ok:
        message = f"the candidate failed under the profiler: {report.message}"
    else:
        message = errors or _nothing(report, run)
    return Profile(available=False, message=message, device=device, calls=calls)


def _rocprof_run(
    sandboxed: Callable[[list[str], Path], SandboxRun],
    tool: str,
    child: list[str],
    out_dir: Path,
    counters: list[str],
    target: Target,
) -> tuple[SandboxRun, rocprof.RocprofOutput]:
    _clear(out_dir)
    out_dir.mkdir()
    run = sandboxed(rocprof.command(tool, child, out_dir, counters), Path(tool).resolve().parent.parent)
    kernel_trace, counter_collection, markers = rocprof.read_output(out_dir)
    return run, rocprof.parse(
        kernel_trace, counter_collection, markers, range_name=PROFILE_RANGE, device_name=target.device
    )


def _clear(path: Path) -> None:
    """Remove whatever is at `path`: the run child had this scratch dir before the profiler, and
    could have left a forged profiler output (or a link, or a directory) there."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _ncu_output(log_path: Path, run: SandboxRun) -> ncu.NcuOutput:
    text = read_untrusted(log_path)
    if '"ID"' not in text:
        text += "\n" + run.stdout  # an ncu that printed its CSV to stdout despite --log-file
    return ncu.parse(text)


def _nothing(report: ProfileChildReport | None, run: SandboxRun) -> str:
    if report is not None and report.ok:
        return "the profiler saw no GPU kernel inside the candidate's profiled calls"
    tail = (run.stderr.strip() or run.stdout.strip()).splitlines()[-1:] or [""]
    status = f"signal {run.signal}" if run.signal else f"status {run.returncode}"
    return f"the profiler produced no profile (exit {status}){': ' + tail[0][:300] if tail[0] else ''}"


def _child_report(path: Path) -> ProfileChildReport | None:
    with contextlib.suppress(ValueError):
        return ProfileChildReport.model_validate_json(read_untrusted(path, 1 << 16))
    return None
