"""evaluate(problem, submission, options, on_status) -> Result: one evaluation, in the parent.

The parent runs no candidate or problem code and never initializes a GPU. It
1. decides the language and rejects obviously unusable sources (empty, Python syntax),
2. learns the target (a probe child, cached) so native code is built for the device's arch,
3. builds native code (evaluator.build.build_native: its own sandboxed child, cached),
4. runs `python -m evaluator.runner JOB.json` in the sandbox with a wall-clock limit — or, when
   the worker enabled spares (`enable_spares`), releases a spare run child started in the same
   sandbox before the job arrived (evaluator/spares.py),
5. turns the report — or its absence — into a Result: no report after a kill is `timeout`,
   after a crash `runtime_error` with the log tail and the phase it died in.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from evaluator import baselines
from evaluator.ceilings import probe_ceilings, published_ceilings
from evaluator.feedback import feedback
from evaluator.languages import NATIVE_LANGUAGES
from evaluator.languages.infer import infer_language
from evaluator.languages.precheck import precheck
from evaluator.options import EvalOptions, Submission
from evaluator.problem import Problem
from evaluator.result import Backend, Baseline, Language, Logs, Result, Speedup, Status, Target, Verdict
from evaluator.runner import RunJob, RunReport
from evaluator.sandbox import (
    EXTRA_RO_ENV,
    MEMORY_ENV,
    UNSAFE_ENV,
    Limits,
    SandboxRun,
    describe,
    run_sandboxed,
)
from evaluator.spares import SCRATCH_PLACEHOLDER, Spare, SpareConfig, SparePool, SpareStats
from evaluator.targets import cpu as cpu_target_module
from evaluator.targets.detect import forget_probe, probe_target, torch_device

if TYPE_CHECKING:
    from evaluator.build.ahead import AheadReport, StubFacts
    from evaluator.build.models import BuildOutput, TrustedToolchain

# Environment variables a child may inherit from the parent (never the whole environment: it may
# hold database URLs and keys). Device visibility, toolchain locations, library paths.
PASS_THROUGH_ENV = (
    "PATH",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_HOME",
    "CUDA_PATH",
    "ROCM_PATH",
    "ROCM_HOME",
    "HIP_PATH",
    "OMP_NUM_THREADS",
    "KJUDGE_UNSAFE_NO_SANDBOX",
)
LOG_TAIL = 8000
# The spare run children (off unless enable_spares).
SPARES = SparePool()


class EvaluationError(RuntimeError):
    """kjudge itself failed (not the candidate, not the problem): the worker marks status error."""


def child_env(scratch: Path, cache_dir: Path, backend: Backend | None) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASS_THROUGH_ENV if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env |= {
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        # The child imports exactly what the parent can (editable installs, wheels on PYTHONPATH).
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.isdir(p)),
        "XDG_CACHE_HOME": str(scratch / ".cache"),
        "TORCH_EXTENSIONS_DIR": str(cache_dir / "torch_extensions"),
        "TRITON_CACHE_DIR": str(cache_dir / "triton"),
        "TORCHINDUCTOR_CACHE_DIR": str(cache_dir / "inductor"),
    }
    if backend is Backend.CPU:
        env |= cpu_target_module.CHILD_ENV
    return env | _host_compiler_env()


def _host_compiler_env() -> dict[str, str]:
    """The parent's host compiler, by the path it resolved: a child that builds (load_inline in
    the ahead child or the run) keys its cache lookups with it, and the parent's precompiled
    header and lite runtimes are found only under the same compiler. A parent with CXX=c++ once
    sent every KernelBench candidate to the 20 s build with PyTorch's headers."""
    from evaluator.build.toolchain import host_compiler

    try:
        return {"CXX": host_compiler()}
    except FileNotFoundError:
        return {}


def prepare(device: str, cache_dir: Path) -> list[str]:
    """Worker start-up: learn the target, measure the device's ceilings and build the shared
    precompiled header, so that none of it lands on the first candidate's clock. Best effort:
    each step the first evaluation would otherwise do itself. Returns one log line per step."""
    cache_dir = Path(cache_dir).expanduser().resolve()
    cache_dir.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kjudge-prepare-") as tmp:
        env = child_env(Path(tmp), cache_dir, None)
        target = probe_target(device, env, cache_dir)
        lines.append(f"target {target.backend.value} {target.arch} {target.device}")
        torch_version = baselines.installed_torch_version() or "unknown"
        ceilings = probe_ceilings(target, env, cache_dir, torch_version)
        if ceilings is not None:
            lines.append(
                f"ceilings: copy {ceilings.copy_gbps:.0f} GB/s, peak {ceilings.max_flops() / 1e12:.0f} TFLOP/s"
            )
    from evaluator.build import prepare_toolchain

    lines.append(prepare_toolchain(_native_cache(cache_dir), target.backend).strip())
    return lines


def enable_spares(on: bool = True, size: int = 1, cpus: Sequence[int] | None = None) -> None:
    """Keep `size` spare run children ready for the next evaluations, importing on `cpus` (a
    worker's start-up; see evaluator/spares.py). Off by default: a one-shot caller must not
    leave a process behind. Turning it off kills the waiting spares."""
    SPARES.enable(on, size=size, cpus=cpus)


def spare_stats() -> SpareStats:
    return SPARES.stats.model_copy()


def _verdict_result(
    problem: Problem, submission: Submission, verdict: Verdict, message: str, **kw: object
) -> Result:
    return Result(
        problem_id=problem.id,
        verdict=verdict,
        message=message,
        metadata=dict(submission.metadata),
        **kw,  # type: ignore[arg-type]
    )


def evaluate(
    problem: Problem,
    submission: Submission,
    options: EvalOptions | None = None,
    on_status: Callable[[Status], None] | None = None,
) -> Result:
    options = options or EvalOptions()
    notify = on_status or (lambda _status: None)
    started = time.monotonic()
    durations: dict[str, float] = {}

    language = submission.language or infer_language(submission.source, submission.filename)
    early = precheck(submission.source, language)
    if early:
        return _completed(
            _verdict_result(problem, submission, Verdict.COMPILE_ERROR, early, durations_s={"total": 0.0}),
            submission,
            options,
        )

    cache_dir = options.resolved_cache_dir()
    cache_dir.mkdir(parents=True, exist_ok=True)
    scratch_root = options.scratch_root
    if scratch_root is not None:
        scratch_root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="kjudge-eval-", dir=scratch_root)).resolve()
    scratches = [scratch]  # a spare's scratch joins it
    try:
        result = _evaluate(
            problem, submission, language, options, notify, cache_dir, scratches, durations, started
        )
        return _completed(result, submission, options)
    finally:
        if not options.keep_scratch:
            for path in scratches:
                shutil.rmtree(path, ignore_errors=True)
        # The next evaluation's child starts importing now, while the worker waits for a job.
        SPARES.refill()


def _completed(result: Result, submission: Submission, options: EvalOptions) -> Result:
    """The last touches on a finished Result: a requested profile always answers, also when
    nothing was profiled; then feedback for a model's next turn (evaluator/feedback.py), which
    reads the profile's bottleneck line."""
    if options.profile and result.profile is None:
        from evaluator.profiling.run import not_profiled

        result.profile = not_profiled(result.verdict)
    result.feedback = feedback(result, submission.source)
    return result


def _evaluate(
    problem: Problem,
    submission: Submission,
    language: Language,
    options: EvalOptions,
    notify: Callable[[Status], None],
    cache_dir: Path,
    scratches: list[Path],
    durations: dict[str, float],
    started: float,
) -> Result:
    scratch = scratches[0]
    t = time.monotonic()
    probe_env = child_env(scratch, cache_dir, None)
    target = probe_target(options.device, probe_env, cache_dir)
    torch_version = baselines.installed_torch_version() or "unknown"
    ceilings = (
        # datasheet peaks (evaluator/device_facts.py) only where the measurement failed
        (probe_ceilings(target, probe_env, cache_dir, torch_version) or published_ceilings(target))
        if options.measure_timing and target.backend != Backend.CPU
        else None
    )
    durations["probe"] = time.monotonic() - t
    base = {"target": target, "metadata": dict(submission.metadata)}

    notify(Status.COMPILING)
    build = None
    compile_log = ""
    if language in NATIVE_LANGUAGES:
        t = time.monotonic()
        build = _build_native(submission, language, target, cache_dir, options)
        durations["compile"] = time.monotonic() - t
        durations |= _build_steps(build)
        compile_log = build.log[-LOG_TAIL:]
        if not build.ok:
            return _finish(problem, _build_failed(problem, build, base), durations, started)

    cache = baselines.BaselineCache(cache_dir)
    cached = cache.load(problem.id, target.device, torch_version) if options.baselines else None
    want_compile = (
        options.compile_baseline if options.compile_baseline is not None else target.backend != Backend.CPU
    )
    to_measure = baselines.missing(cached, want_compile) if options.baselines else []
    # Every Nth evaluation that uses a cached baseline re-measures it in the same trusted child
    # (evaluator/baselines.py: settle_recheck), to find a cached yardstick that went wrong.
    reuse = [n for n in (baselines.EAGER, baselines.COMPILE) if cached and cached.value(n) is not None]
    reuse = [n for n in reuse if n not in to_measure and (n == baselines.EAGER or want_compile)]
    recheck = (
        reuse
        if reuse and cache.note_use(problem.id, target.device, torch_version, options.baseline_recheck_every)
        else []
    )

    seed = options.seed if options.seed is not None else secrets.randbelow(1 << 31)
    (scratch / "problem.py").write_text(problem.source)
    suffix = ".py" if language not in NATIVE_LANGUAGES else ".src"
    candidate_path = scratch / f"kjudge_candidate{suffix}"
    candidate_path.write_text(submission.source)
    job = RunJob(
        problem_path=scratch / "problem.py",
        settings=problem.settings,
        language=language,
        candidate_path=candidate_path,
        entry=submission.entry,
        build=build,
        native_cache_dir=cache_dir / "inline",  # sandbox: kernelbench builds apart from native ones
        pch_cache_dir=_native_cache(cache_dir),
        device=torch_device(target),  # type: ignore[arg-type]
        target=target,
        trials=options.trials,
        seed=seed,
        timing=options.timing,
        measure_timing=options.measure_timing,
        baselines=[*to_measure, *recheck],
        report_path=scratch / "report.json",
        phase_path=scratch / "phase",
        spawned_at=time.time(),
        ceilings=ceilings,
    )
    if _builds_inline(language, submission.source, target):
        # --- sandbox: the header its load_inline builds use is built here, trusted, and bound
        # read-only into the run; a run never builds one where later runs would pick it up ---
        t = time.monotonic()
        from evaluator.build.prepare import ensure_toolchain

        compile_log += ensure_toolchain(_native_cache(cache_dir), target.backend)
        durations["pch"] = time.monotonic() - t
    notify(Status.RUNNING)
    env = child_env(scratch, cache_dir, target.backend)
    limits = Limits(wall_s=options.run_timeout_s, cpu_s=int(options.run_timeout_s * 8) + 60)
    # --- integrity: baselines come from a child that never loads the candidate ---
    trusted: RunReport | None = None
    rechecked: baselines.Recheck | None = None
    if job.baselines:
        t = time.monotonic()
        trusted = _measure_baselines(job, scratch, limits, env, target, cache_dir)
        durations["baselines_child"] = time.monotonic() - t
        if recheck and cached is not None:

            def again(names: list[str]) -> baselines.Measured | None:
                t = time.monotonic()
                confirm = job.model_copy(update={"baselines": names})
                report = _measure_baselines(confirm, scratch, limits, env, target, cache_dir, "confirm-")
                durations["baselines_confirm"] = time.monotonic() - t
                return (report.baselines, report.baseline_timing) if report is not None else None

            first = (trusted.baselines, trusted.baseline_timing) if trusted is not None else None
            rechecked = baselines.settle_recheck(cached, recheck, first, again)
        job = job.model_copy(update={"baselines": []})
    # ---
    plain_job = job  # profile mode reruns the candidate from the main scratch, not a spare's
    spare = SPARES.claim(_spare_config(target, cache_dir, options.scratch_root, limits))
    if target.backend != Backend.CPU:
        # The next job's spare imports while this one runs, so that it is ready even when jobs
        # come back to back (an RL backlog). Not on CPU targets: its imports would share the
        # cores this run's host-clock timings measure.
        SPARES.refill()
    if spare is not None:
        scratches.append(spare.scratch)
        run, job = _run_in_spare(spare, job)
    else:
        job = job.model_copy(update={"spawned_at": time.time()})
        # --- sandbox: the candidate may write only the caches its own builds need; baselines,
        # probed targets and compiled native modules (other submissions') stay out of reach ---
        readonly = [*_readonly_for_run(build), *_readonly_for_any_run(cache_dir)]
        run = _run_runner(job, scratch / "job.json", limits, target, env, cache_dir, readonly)
    durations["run"] = run.wall_s
    run_ended = time.time()
    logs = Logs(compile=compile_log, run=_run_log(run))
    report = _read_report(job.report_path)
    if report is not None and report.finished_at:
        durations["exit"] = max(0.0, run_ended - report.finished_at)
    if report is None:
        return _finish(problem, _no_report(problem, run, limits, job, logs, base), durations, started)
    if report.internal_error:
        if report.target_mismatch:
            forget_probe(options.device, probe_env, cache_dir)
        raise EvaluationError("the evaluation child failed inside kjudge:\n" + report.internal_error)

    # Never the candidate's report's. Only those that were missing: re-checks are settled apart.
    measured = {
        f"{n}_ms": trusted.baselines[f"{n}_ms"]
        for n in to_measure
        if trusted is not None and f"{n}_ms" in trusted.baselines
    }
    fresh_timing = {n: t for n, t in (trusted.baseline_timing if trusted else {}).items() if n in to_measure}
    # A baseline measured on a busy host or GPU is used for this result, flagged, and not cached:
    # every later submission of the problem would inherit the bad yardstick.
    disturbed = any(t.contended for t in fresh_timing.values())
    if measured and not disturbed and trusted is not None and trusted.target is not None:
        # Keyed as the next lookup keys it: the probed device and the installed torch's version
        # (the child's torch.__version__ may spell it differently, "2.11.0+cu130" vs "2.11.0",
        # which made every evaluation re-measure its baselines).
        cache.store(
            baselines.BaselineEntry(
                eager_ms=measured.get("eager_ms"),
                compile_ms=measured.get("compile_ms"),
                device=target.device,
                torch_version=torch_version,
                problem_id=problem.id,
                conditions={k: v.model_dump() for k, v in fresh_timing.items()},
            )
        )
        cached = cache.load(problem.id, target.device, torch_version)
    baseline = None
    if options.baselines:
        eager = measured.get("eager_ms", cached.eager_ms if cached else None)
        compiled = measured.get("compile_ms", cached.compile_ms if cached and want_compile else None)
        replaced: dict[str, float] = {}
        if rechecked is not None and cached is not None:
            eager = rechecked.values.get(baselines.EAGER, eager)
            compiled = rechecked.values.get(baselines.COMPILE, compiled)
            replaced = rechecked.replaced
            # Into the cache only now, with the Result that reports it (the service recomputes
            # the earlier results' speedups from this Result's replaced_*_ms).
            rechecked.apply(cache, cached)
            note = f"\nkjudge: baseline re-check {rechecked.outcome}" + (
                f": {rechecked.note}" if rechecked.note else ""
            )
            logs.run = (logs.run + note)[-LOG_TAIL:]
        baseline = Baseline(
            eager_ms=eager,
            compile_ms=compiled,
            contended=disturbed,
            torch_version=torch_version,
            recheck=rechecked.outcome if rechecked is not None else None,
            remeasured=bool(replaced),
            replaced_eager_ms=replaced.get(baselines.EAGER),
            replaced_compile_ms=replaced.get(baselines.COMPILE),
        )
    speedup = None
    if report.timing is not None and baseline is not None and report.timing.median_ms > 0:
        speedup = Speedup(
            vs_eager=baseline.eager_ms / report.timing.median_ms if baseline.eager_ms else None,
            vs_compile=baseline.compile_ms / report.timing.median_ms if baseline.compile_ms else None,
        )
    if report.compile_log:
        logs.compile = (logs.compile + report.compile_log)[-LOG_TAIL:]
    flags = list(report.flags) + (["problem_error"] if report.problem_error else [])
    result = Result(
        problem_id=problem.id,
        verdict=report.verdict,
        compiled=report.compiled,
        correct=report.verdict == Verdict.CORRECT,
        correctness=report.correctness,
        timing=report.timing,
        baseline=baseline,
        speedup=speedup,
        roofline=report.roofline,
        flags=flags,
        target=report.target or target,
        logs=logs,
        metadata=dict(submission.metadata),
        message=report.message,
        language=language.value,
    )
    durations.update(report.durations_s)
    if options.profile and result.verdict == Verdict.CORRECT:
        # --- profile mode (evaluator/profiling): a separate sandboxed child under ncu/rocprofv3,
        # after the run; it never changes the verdict or the timing ---
        from evaluator.profiling.run import profile_candidate

        t = time.monotonic()
        result.profile = profile_candidate(
            plain_job,
            target,
            scratch=scratch,
            env=env,
            timeout_s=options.profile_timeout_s,
            readonly_paths=[*_readonly_for_run(build), *_readonly_for_any_run(cache_dir)],
            writable_paths=_writable_for_run(cache_dir),
            roofline=result.roofline,
            median_ms=result.timing.median_ms if result.timing is not None else None,
        )
        durations["profile"] = time.monotonic() - t
    return _finish(problem, result, durations, started)


def _build_steps(build: BuildOutput) -> dict[str, float]:
    """The build's steps as `compile_*` durations; none for a cache hit (they were another's)."""
    return {} if build.cached else {f"compile_{step}": seconds for step, seconds in build.steps_s.items()}


def _build_failed(problem: Problem, build: BuildOutput, base: dict[str, object]) -> Result:
    """The verdict of a native build that failed: the author's compile error, or `rejected`
    when no sandbox could be made to compile in."""
    refused = getattr(build, "refused", None)
    return Result(
        problem_id=problem.id,
        verdict=Verdict.REJECTED if refused else Verdict.COMPILE_ERROR,
        message=refused or build.message or _first_error(build.log),
        logs=Logs(compile=build.log[-LOG_TAIL:]),
        **base,  # type: ignore[arg-type]
    )


class BuildOutcome(BaseModel):
    """What `prebuild` decided without a device. `result` set: the evaluation is over (a compile
    error, a source rejected before any build) and needs no run. Otherwise the run that follows
    on `target` finds the build in the cache (`built`), or builds nothing ahead (a language
    that compiles inside its run: triton, kernelbench)."""

    target: Target
    result: Result | None = None
    built: bool = False
    cached: bool = False
    log: str = ""
    durations_s: dict[str, float] = Field(default_factory=dict)


def prebuild(
    problem: Problem,
    submission: Submission,
    options: EvalOptions | None = None,
    target: Target | None = None,
) -> BuildOutcome:
    """Build ahead of the run, on the host only: what `evaluate` would build, into the same
    content-addressed cache, so that an `evaluate` of the same submission on `target` skips the
    compile. Never touches a device (given `target`; else the cached probe of options.device).
    Raises, like `evaluate`, only for kjudge's own failures."""
    options = options or EvalOptions()
    started = time.monotonic()
    durations: dict[str, float] = {}
    cache_dir = options.resolved_cache_dir()
    cache_dir.mkdir(parents=True, exist_ok=True)
    if target is None:
        with tempfile.TemporaryDirectory(prefix="kjudge-prebuild-", dir=options.scratch_root) as tmp:
            target = probe_target(options.device, child_env(Path(tmp), cache_dir, None), cache_dir)
    base = {"target": target, "metadata": dict(submission.metadata)}
    language = submission.language or infer_language(submission.source, submission.filename)
    early = precheck(submission.source, language)
    if early:
        result = _verdict_result(problem, submission, Verdict.COMPILE_ERROR, early, target=target)
        return BuildOutcome(
            target=target,
            result=_completed(_finish(problem, result, durations, started), submission, options),
        )
    if _builds_inline(language, submission.source, target):
        return _prebuild_inline(submission, options, cache_dir, target, started)
    if language is Language.TRITON:
        from evaluator.triton_prebuild import prebuild_triton

        ahead = prebuild_triton(problem, submission, options, cache_dir, target, started)
        if ahead is not None:
            return ahead
    if language not in NATIVE_LANGUAGES:
        return BuildOutcome(target=target, durations_s={"compile": 0.0})
    build = _build_native(submission, language, target, cache_dir, options)
    durations["compile"] = time.monotonic() - started
    durations |= _build_steps(build)
    if not build.ok:
        # The compile stage's verdict is final: it gets the same last touches as evaluate's.
        result = _completed(
            _finish(problem, _build_failed(problem, build, base), durations, started), submission, options
        )
        return BuildOutcome(target=target, result=result, log=build.log[-LOG_TAIL:])
    return BuildOutcome(
        target=target,
        built=True,
        cached=build.cached,
        log=build.log[-LOG_TAIL:],
        durations_s={k: round(v, 4) for k, v in durations.items()},
    )


def _prebuild_inline(
    submission: Submission, options: EvalOptions, cache_dir: Path, target: Target, started: float
) -> BuildOutcome:
    """A KernelBench candidate's load_inline builds, ahead: its import in a sandbox without a
    device (evaluator/build/ahead.py), the shim writing where the run's will read; first against
    the stand-in torch (no torch import: 5-8 s less), then, if that import failed before it
    built anything, against the real one. Decides no verdict: whatever went wrong, the run meets
    it again and reports it as it always did."""
    from evaluator.build.engine import timed_step
    from evaluator.build.prepare import ensure_toolchain, trusted_toolchain

    log = ensure_toolchain(_native_cache(cache_dir), target.backend)
    toolchain = trusted_toolchain(_native_cache(cache_dir), target.backend)
    if options.scratch_root is not None:
        options.scratch_root.mkdir(parents=True, exist_ok=True)
    (cache_dir / "inline").mkdir(parents=True, exist_ok=True)
    stub = _stub_facts(target)
    durations: dict[str, float] = {}
    with timed_step(durations, "compile_child"):
        report = _ahead_child(submission, options, cache_dir, target, stub, toolchain)
    if stub is not None and report.other_error is not None and report.builds == 0:
        log += f"the stand-in torch could not import the candidate ({report.other_error}); importing it with torch\n"
        with timed_step(durations, "compile_torch_child"):
            report = _ahead_child(submission, options, cache_dir, target, None, toolchain)
    elapsed = time.monotonic() - started
    built = report.builds > 0 and report.build_error is None
    if built and report.stubbed:
        log += "built ahead under the stand-in torch\n"
    if report.lite is False:
        log += f"a load_inline build did not take the lite torch API:\n{report.not_lite_log}\n"
    note = report.build_error or report.other_error or ""
    durations |= {f"compile_{step}": seconds for step, seconds in report.steps_s.items()}
    return BuildOutcome(
        target=target,
        built=built,
        log=(log + note)[-LOG_TAIL:],
        durations_s={"compile": round(elapsed, 4)} | {k: round(v, 4) for k, v in durations.items()},
    )


def _stub_facts(target: Target) -> StubFacts | None:
    """What the ahead child needs to know of torch to import a candidate under the stand-in
    (evaluator/build/stub_torch.py); None on ROCm, whose builds go through PyTorch's own builder."""
    if target.backend is Backend.ROCM:
        return None
    import inspect

    import torch
    from torch.utils import cpp_extension

    from evaluator.build.ahead import StubFacts
    from evaluator.build.toolchain import torch_info

    original = getattr(cpp_extension.load_inline, "__kjudge_original__", cpp_extension.load_inline)
    original_load = getattr(cpp_extension.load, "__kjudge_original__", cpp_extension.load)
    return StubFacts(
        torch=torch_info(),
        torch_cuda=torch.version.cuda is not None,
        inline_params=list(inspect.signature(original).parameters),
        load_params=list(inspect.signature(original_load).parameters),
    )


def _ahead_child(
    submission: Submission,
    options: EvalOptions,
    cache_dir: Path,
    target: Target,
    stub: StubFacts | None,
    toolchain: TrustedToolchain,
) -> AheadReport:
    from evaluator.build.ahead import AheadJob, AheadReport

    def job(candidate: Path, report: Path) -> AheadJob:
        return AheadJob(
            candidate_path=candidate,
            target=target,
            inline_cache=cache_dir / "inline",
            pch_cache=_native_cache(cache_dir),
            report_path=report,
            stub=stub,
            toolchain=toolchain,
        )

    report, why_not = host_child(
        "evaluator.build.ahead", job, submission, options, cache_dir, target, "inline"
    )
    return AheadReport(other_error=why_not) if report is None else AheadReport.model_validate(report)


def host_child(
    module: str,
    make_job: Callable[[Path, Path], BaseModel],  # (candidate path, report path) -> job
    submission: Submission,
    options: EvalOptions,
    cache_dir: Path,
    target: Target,
    writable_cache: str,
) -> tuple[dict[str, object] | None, str]:
    """Runs `python -m module JOB.json` on the candidate's source in a sandbox without a device,
    writing only cache/`writable_cache`. Returns (the job's report as read back, "") or (None,
    why there is none)."""
    scratch = Path(tempfile.mkdtemp(prefix="kjudge-ahead-", dir=options.scratch_root)).resolve()
    try:
        candidate, report = scratch / "kjudge_candidate.py", scratch / "report.json"
        candidate.write_text(submission.source)
        job = make_job(candidate, report)
        (scratch / "job.json").write_text(job.model_dump_json())
        run = run_sandboxed(
            [sys.executable, "-m", module, str(scratch / "job.json")],
            scratch=scratch,
            limits=Limits(wall_s=options.build_timeout_s, cpu_s=int(options.build_timeout_s * 8) + 60),
            gpu=False,
            env=child_env(scratch, cache_dir, target.backend),
            readonly_paths=_readonly_for_any_run(cache_dir),
            writable_paths=[cache_dir / writable_cache],
        )
        try:
            return json.loads(report.read_text()), ""
        except (OSError, ValueError):
            return None, describe(run, Limits()) or f"{module} left no report"
    finally:
        if not options.keep_scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def _spare_config(target: Target, cache_dir: Path, scratch_root: Path | None, limits: Limits) -> SpareConfig:
    """What the run child's sandbox depends on; env as child_env would give it in any scratch."""
    return SpareConfig(
        python=sys.executable,
        gpu=target.backend != Backend.CPU,
        backend=target.backend,
        env=child_env(Path(SCRATCH_PLACEHOLDER), cache_dir, target.backend),
        sandbox_env={k: os.environ[k] for k in (UNSAFE_ENV, EXTRA_RO_ENV, MEMORY_ENV) if k in os.environ},
        cache_dir=cache_dir,
        scratch_root=scratch_root.resolve() if scratch_root is not None else None,
        limits=limits,
        writable_paths=tuple(_writable_for_run(cache_dir)),
        readonly_paths=tuple(_readonly_for_any_run(cache_dir)),
    )


def _run_in_spare(spare: Spare, job: RunJob) -> tuple[SandboxRun, RunJob]:
    """Give the job to a waiting spare: its files go into the spare's scratch (the sandbox sees
    them through its bind), then the go line; the wall clock starts there."""
    scratch = spare.scratch
    try:
        problem_path = scratch / job.problem_path.name
        candidate_path = scratch / job.candidate_path.name
        shutil.copyfile(job.problem_path, problem_path)
        shutil.copyfile(job.candidate_path, candidate_path)
        build = job.build
        if build is not None and build.module_path is not None:
            # The plain run binds the module's cache directory read-only; a spare's binds were
            # fixed before the build existed. A copy (never a hard link: scratch is writable and
            # the cached module is shared) under the same name, so PyInit_<name> still matches.
            module = scratch / "module" / build.module_path.name
            module.parent.mkdir()
            shutil.copyfile(build.module_path, module)
            build = build.model_copy(update={"module_path": module})
        job = job.model_copy(
            update={
                "problem_path": problem_path,
                "candidate_path": candidate_path,
                "build": build,
                "report_path": scratch / job.report_path.name,
                "phase_path": scratch / job.phase_path.name,
                "spawned_at": time.time(),  # the release: process_start counts from here
            }
        )
        spare.job_path.write_text(job.model_dump_json())
    except BaseException:
        spare.discard()
        raise
    spare.release()
    return spare.process.finish(), job


def _measure_baselines(
    job: RunJob,
    scratch: Path,
    limits: Limits,
    env: dict[str, str],
    target: Target,
    cache_dir: Path,
    prefix: str = "",
) -> RunReport | None:
    """Time the reference (eager / torch.compile) in a sandboxed child that stops before the
    candidate would be loaded. None when it failed; the candidate run then reports the problem's
    own failure (it builds the same reference first)."""
    bjob = job.model_copy(
        update={
            "baselines_only": True,
            "report_path": scratch / f"{prefix}baselines-report.json",
            "phase_path": scratch / f"{prefix}baselines-phase",
            "spawned_at": time.time(),
        }
    )
    _run_runner(bjob, scratch / f"{prefix}baselines-job.json", limits, target, env, cache_dir)
    report = _read_report(bjob.report_path)
    if report is None or report.internal_error or report.problem_error or not report.baselines:
        return None
    return report


def _run_runner(
    job: RunJob,
    job_path: Path,
    limits: Limits,
    target: Target,
    env: dict[str, str],
    cache_dir: Path,
    readonly_paths: list[Path] | None = None,
) -> SandboxRun:
    """`python -m evaluator.runner JOB.json` in a fresh sandbox whose scratch holds the job."""
    job_path.write_text(job.model_dump_json())
    return run_sandboxed(
        [sys.executable, "-m", "evaluator.runner", str(job_path)],
        scratch=job_path.parent,
        limits=limits,
        gpu=target.backend != Backend.CPU,
        env=env,
        readonly_paths=readonly_paths or [],
        writable_paths=_writable_for_run(cache_dir),
    )


# Cache subdirectories a run may write (child_env points the toolchains at them). A candidate can
# leave files there that a later candidate's build of the same key picks up: docs/integrity.md.
RUN_WRITABLE_CACHES = ("inline", "triton", "inductor", "torch_extensions")


def _writable_for_run(cache_dir: Path) -> list[Path]:
    dirs = [cache_dir / name for name in RUN_WRITABLE_CACHES]
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
    return dirs


def _build_native(
    submission: Submission, language: Language, target: Target, cache_dir: Path, options: EvalOptions
) -> BuildOutput:
    """The native build evaluate and prebuild share (its cache is what makes prebuild's build
    the one a later evaluate loads)."""
    from evaluator.build import build_native

    return build_native(
        submission.source,
        language,
        submission.entry,
        target,
        _native_cache(cache_dir),
        timeout_s=options.build_timeout_s,
    )


def _native_cache(cache_dir: Path) -> Path:
    """Native builds' cache: compiled modules and the precompiled torch header (build/pch.py)."""
    return cache_dir / "native"


def _readonly_for_any_run(cache_dir: Path) -> list[Path]:
    """What every run child may read, all of it trusted: the precompiled headers (load_inline
    uses them) and the lite runtimes (a lite module loads its runtime library from there)."""
    trusted = [_native_cache(cache_dir) / "pch", _native_cache(cache_dir) / "lite"]
    for path in trusted:
        path.mkdir(parents=True, exist_ok=True)
    return trusted


def _builds_inline(language: Language, source: str, target: Target) -> bool:
    """A KernelBench candidate that builds C++/CUDA through torch.utils.cpp_extension (ROCm
    builds through PyTorch's own hipcc path, which uses no precompiled header). Read from the
    text: a candidate that hides the call still builds, only without the header."""
    return (
        language is Language.KERNELBENCH and target.backend is not Backend.ROCM and "cpp_extension" in source
    )


def _readonly_for_run(build: object) -> list[Path]:
    """The one compiled module this run loads (not the whole cache of other submissions')."""
    module_path = getattr(build, "module_path", None)
    return [Path(module_path).parent] if module_path else []


def _finish(problem: Problem, result: Result, durations: dict[str, float], started: float) -> Result:
    durations["total"] = time.monotonic() - started
    result.durations_s = {k: round(v, 4) for k, v in durations.items()}
    return result


def _first_error(log: str) -> str:
    """The compiler's first error line: what the author looks at first."""
    for line in log.splitlines():
        if "error" in line.lower() and not line.startswith("=="):
            return "compilation failed: " + line.strip()[:300]
    return "compilation failed; see logs.compile"


def _read_report(path: Path) -> RunReport | None:
    try:
        return RunReport.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None


def _run_log(run: SandboxRun) -> str:
    parts = [p for p in (run.stdout.strip(), run.stderr.strip()) if p]
    return "\n".join(parts)[-LOG_TAIL:]


def _phase(job: RunJob) -> str:
    try:
        return job.phase_path.read_text().strip() or "startup"
    except OSError:
        return "startup"


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _no_report(
    problem: Problem, run: SandboxRun, limits: Limits, job: RunJob, logs: Logs, base: dict[str, object]
) -> Result:
    """The child died or was killed before writing its report."""
    phase = _phase(job)
    reached_load = phase not in ("startup", "import", "setup", "baselines", "load")
    common = {"problem_id": problem.id, "logs": logs, "compiled": reached_load, **base}
    if run.refused:
        return Result(verdict=Verdict.REJECTED, message=run.refused, **common)  # type: ignore[arg-type]
    if run.timed_out or run.killed_reason in ("wall_clock", "cpu_limit"):
        what = describe(run, limits) or "the evaluation exceeded its time limit"
        return Result(verdict=Verdict.TIMEOUT, message=f"{what} (during {phase})", **common)  # type: ignore[arg-type]
    if run.killed_reason:
        what = describe(run, limits) or f"stopped by the sandbox ({run.killed_reason})"
        return Result(verdict=Verdict.RUNTIME_ERROR, message=f"{what} (during {phase})", **common)  # type: ignore[arg-type]
    if run.signal:
        how = f"crashed with {_signal_name(run.signal)}"
    else:
        how = f"exited with status {run.returncode} without a result"
    tail = (run.stderr.strip() or run.stdout.strip()).splitlines()[-1:] or [""]
    detail = f": {tail[0][:300]}" if tail[0] else ""
    return Result(
        verdict=Verdict.RUNTIME_ERROR,
        message=f"the evaluation process {how} during {phase}{detail}",
        **common,  # type: ignore[arg-type]
    )
