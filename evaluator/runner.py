"""The child: `python -m evaluator.runner JOB.json` writes the report JSON named in the job.

Everything device-side of one evaluation happens here, in one process: load the problem, build
the reference, time the baselines (before the candidate is imported, so it cannot touch them),
load the candidate, run the correctness trials, time it. The parent (evaluator/api.py) runs this
in the sandbox with a wall-clock limit; a crash or hang leaves no report and the parent turns
that into `runtime_error` / `timeout`. Stdout and stderr are logs only.

`python -m evaluator.runner --await-job JOB.json [--spawned-at T]` is a spare (evaluator/spares.py):
it does the imports first, then waits for one line on stdin; only then does it read JOB.json (the
parent writes it after the spawn) and go on as above. EOF instead of a line: discarded, exit 0.
The time spent before the job arrived is reported apart (`spare_start`, `spare_import`).

Order inside a correctness trial (DESIGN.md): fresh inputs from the trial's seed, a pristine
copy, poisoned free memory, the candidate first, then the reference from the pristine copy (so
no reference result of this trial exists while the candidate runs), compare, then overwrite the
reference outputs before freeing them.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import random
import secrets
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from evaluator.build.models import BuildOutput
from evaluator.ceilings import Ceilings
from evaluator.options import TimingOptions
from evaluator.problem import ProblemSettings
from evaluator.result import Correctness, Language, Roofline, Target, Timing, Verdict

PROBLEM_MODULE = "kjudge_problem"
INPUT_MODIFIED = "input_modified"
# Written beside the job file once a spare has imported everything: the parent may look.
SPARE_READY = "spare-ready"
# What a run imports before it looks at its job (torch: nearly all of the ~3 s) and the modules
# the later phases import lazily. A spare imports them before its job exists: trusted code only.
PRELOAD = (
    "torch",
    # The roofline's meta-device inputs go through torch._disable_dynamo wrappers, which import
    # dynamo on first call: 4 s on the H200 machine, at the end of every run without a spare.
    "torch._dynamo",
    "torch.autograd.profiler",
    "evaluator.targets.detect",
    "evaluator.integrity",
    "evaluator.roofline",
    "evaluator.correctness",
    "evaluator.timing",
    "evaluator.languages.native",
    "evaluator.languages.python_module",
    "evaluator.build",
)
USAGE = "usage: python -m evaluator.runner JOB.json | --await-job JOB.json [--spawned-at UNIX_TIME]"


class RunJob(BaseModel):
    """The parent → child contract (a JSON file in the child's scratch)."""

    problem_path: Path
    settings: ProblemSettings
    language: Language
    candidate_path: Path
    entry: str = "forward"
    build: BuildOutput | None = None  # native languages: the module the build step produced
    native_cache_dir: Path  # where load_inline (kernelbench) builds are cached
    # The parent's cache, whose precompiled torch header load_inline builds use (bound read-only).
    pch_cache_dir: Path | None = None
    device: Literal["cpu", "cuda"]
    target: Target  # what the parent probed; the child refuses to run on anything else
    trials: int
    seed: int
    timing: TimingOptions
    measure_timing: bool = True
    baselines: list[str] = Field(default_factory=list)  # which to measure: "eager", "compile"
    # integrity: measure the baselines and stop, never loading the candidate (api.py runs this
    # child apart, so a candidate's forged report cannot poison the shared baseline cache)
    baselines_only: bool = False
    report_path: Path
    phase_path: Path
    # time.time() in the parent just before the child started (a spare: just before its release)
    spawned_at: float
    # the device's ceilings, measured once by a trusted child (evaluator/ceilings.py)
    ceilings: Ceilings | None = None


class RunReport(BaseModel):
    """The child → parent contract."""

    verdict: Verdict | None = None
    message: str | None = None
    compiled: bool = False
    problem_error: bool = False
    target: Target | None = None
    torch_version: str | None = None
    correctness: Correctness | None = None
    timing: Timing | None = None
    roofline: Roofline | None = None
    baselines: dict[str, float] = Field(default_factory=dict)
    # how each baseline was measured: spread, method, whether the host or GPU was contended
    baseline_timing: dict[str, Timing] = Field(default_factory=dict)
    flags: list[str] = Field(default_factory=list)
    compile_log: str = ""
    durations_s: dict[str, float] = Field(default_factory=dict)
    internal_error: str | None = None
    target_mismatch: bool = False
    finished_at: float | None = None  # time.time() as the report was written: the parent's
    # wall time after it is the child's exit (device context teardown) and the sandbox's


class Stop(Exception):
    """Ends the evaluation with a verdict (the candidate's doing)."""

    def __init__(self, verdict: Verdict, message: str, log: str = "") -> None:
        super().__init__(message)
        self.verdict, self.message, self.log = verdict, message, log


class ProblemFailure(Exception):
    """The problem itself failed (its get_inputs, Model, or forward raised)."""


def _log(message: str) -> None:
    print(f"[kjudge] {message}", file=sys.stderr, flush=True)


def exception_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}"[:500] if lines else type(exc).__name__


class Runner:
    def __init__(self, job: RunJob, before_job: dict[str, float] | None = None) -> None:
        self.job = job
        self.report = RunReport()
        # A spare's time spent before its job arrived: reported, under keys of its own.
        self.durations: dict[str, float] = dict(before_job or {})
        self._inputs_s = 0.0  # input generation time, reported apart from the phase it ran in
        self.flags: list[str] = []

    # -- bookkeeping ---------------------------------------------------------------------------
    def mark(self, phase: str) -> None:
        """Where we are, for the parent's message if this process dies or hangs."""
        with contextlib.suppress(OSError):
            self.job.phase_path.write_text(phase)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self.mark(name)
        start, inputs_before = time.perf_counter(), self._inputs_s
        try:
            yield
        finally:
            spent = time.perf_counter() - start - (self._inputs_s - inputs_before)
            self.durations[name] = self.durations.get(name, 0.0) + spent

    # -- the evaluation ------------------------------------------------------------------------
    def run(self) -> RunReport:
        self.durations["process_start"] = max(0.0, time.time() - self.job.spawned_at)
        try:
            self._run()
        except Stop as stop:
            self.report.verdict, self.report.message = stop.verdict, stop.message
            if stop.log:
                _log(stop.log)
        except ProblemFailure as exc:
            self.report.verdict = Verdict.RUNTIME_ERROR
            self.report.problem_error = True
            self.report.message = f"problem error (fix the problem, not the kernel): {exc}"
        except Exception:  # noqa: BLE001  kjudge's own failure: the parent raises it
            self.report.internal_error = traceback.format_exc()
        self.durations["inputs"] = self._inputs_s
        self.report.durations_s = {k: round(v, 6) for k, v in self.durations.items()}
        self.report.flags = sorted(set(self.report.flags) | set(self.flags))
        return self.report

    def _run(self) -> None:
        job = self.job
        with self.phase("import"):
            import torch

            from evaluator.targets.detect import detect_target

        with self.phase("setup"):
            target = detect_target(job.device)
            self.report.target, self.report.torch_version = target, torch.__version__
            if (target.backend, target.arch, target.device) != (
                job.target.backend,
                job.target.arch,
                job.target.device,
            ):
                self.report.target_mismatch = True
                raise RuntimeError(
                    f"expected target {job.target.model_dump()}, the child sees {target.model_dump()}"
                )
            self.torch = torch
            self.dev = job.device
            self.sync: Callable[[], None] = torch.cuda.synchronize if self.dev == "cuda" else (lambda: None)
            self.dtype = getattr(torch, job.settings.dtype) if job.settings.dtype else None
            self.problem = self._import_problem()
            self.init_inputs, self.reference = self._build_reference()

        if job.baselines:
            with self.phase("baselines"):
                from evaluator import baselines

                try:
                    self.report.baselines, self.report.baseline_timing = baselines.measure(
                        job.baselines, self.reference, self.fresh_inputs, job.timing, self.dev, _log
                    )
                except Exception as exc:  # noqa: BLE001  the eager reference itself failed
                    raise ProblemFailure(
                        f"the reference Model's forward raised {exception_line(exc)}"
                    ) from exc

        if job.baselines_only:
            return

        # --- integrity (evaluator/integrity.py): snapshot before the candidate is imported ---
        from evaluator import integrity

        with self.phase("guard"):
            guard = integrity.Guard(extra=[sys.modules[__name__], Runner])
        # ---

        with self.phase("load"):
            fn = self._load_candidate()
        self.flags += guard.verify()  # integrity: patched at import?

        with self.phase("correctness"):
            correct = self._correctness(fn)
        self.flags += guard.verify()  # integrity

        # --- integrity: the call-based reward-hack checks, also for an incorrect candidate, so
        # that a hack which breaks the numbers still carries the flag naming it ---
        with self.phase("integrity"):
            self._integrity(fn, correct, guard)
        # ---
        if not correct:
            self.report.verdict = Verdict.INCORRECT
            return

        from evaluator.integrity import REJECTING_FLAGS, rejection_message

        # No GPU time for losers: a candidate already rejected is not timed.
        if job.measure_timing and not any(f in REJECTING_FLAGS for f in self.flags):
            with self.phase("timing"):
                self._time(fn)
            # --- integrity: the timer untouched, the time physically possible ---
            self.flags += guard.verify()
            if self.report.timing is not None:
                with self.phase("roofline"):
                    flags, detail, self.report.roofline = integrity.roofline_flags(
                        vars(self.problem),
                        self.report.timing.median_ms,
                        self.torch.device(self.dev),
                        job.ceilings,
                    )
                self._add_integrity_flags(flags, {f: detail for f in flags})
            # ---

        if any(f in REJECTING_FLAGS for f in self.flags):
            self.report.verdict = Verdict.REJECTED
            self.report.message = rejection_message(self.flags)
        else:
            self.report.verdict = Verdict.CORRECT

    # -- the problem ---------------------------------------------------------------------------
    def _import_problem(self) -> Any:
        spec = importlib.util.spec_from_file_location(PROBLEM_MODULE, self.job.problem_path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[PROBLEM_MODULE] = module
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:  # noqa: BLE001
            raise ProblemFailure(f"importing the problem raised {exception_line(exc)}") from exc
        return module

    def seed_all(self, seed: int) -> None:
        self.torch.manual_seed(seed)
        random.seed(seed)
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed(seed % (1 << 32))

    def _prepare(self, value: Any) -> Any:
        torch = self.torch
        if isinstance(value, torch.Tensor):
            if value.device.type != self.dev:
                value = value.to(self.dev)
            if self.dtype is not None and value.is_floating_point():
                value = value.to(self.dtype)
        return value

    def _build_reference(self) -> tuple[list[Any], Any]:
        """KernelBench's order: seed, get_init_inputs(); seed, Model(...). The candidate's model is
        built after the same re-seed, so models with random weights get identical ones."""
        torch, seed = self.torch, self.job.seed
        self.seed_all(seed)
        try:
            with torch.device(self.dev):
                init_inputs = list(self.problem.get_init_inputs())
        except Exception as exc:  # noqa: BLE001
            raise ProblemFailure(f"the problem's get_init_inputs() raised {exception_line(exc)}") from exc
        init_inputs = [self._prepare(x) for x in init_inputs]
        self.seed_all(seed)
        try:
            with torch.device(self.dev):
                model = self.problem.Model(*init_inputs)
            model = model.to(self.dev)
            if self.dtype is not None:
                model = model.to(self.dtype)
        except Exception as exc:  # noqa: BLE001
            raise ProblemFailure(f"constructing the problem's Model raised {exception_line(exc)}") from exc
        return init_inputs, model

    def make_inputs(self, seed: int, sync: bool = True) -> list[Any]:
        """Inputs for one seed, created on the device (torch.rand in get_inputs allocates there).
        `sync=False` leaves their generation queued on the stream (the timer's fresh inputs: a
        host that waits for each set would leave the GPU idle between timed calls)."""
        start = time.perf_counter()
        torch = self.torch
        self.seed_all(seed)
        try:
            with torch.device(self.dev):
                inputs = self.problem.get_inputs()
        except Exception as exc:  # noqa: BLE001
            raise ProblemFailure(f"the problem's get_inputs() raised {exception_line(exc)}") from exc
        if not isinstance(inputs, list | tuple):
            raise ProblemFailure(f"get_inputs() must return a list of inputs, not {type(inputs).__name__}")
        inputs = [self._prepare(x) for x in inputs]
        if sync:
            self.sync()
        self._inputs_s += time.perf_counter() - start
        return inputs

    # -- the candidate -------------------------------------------------------------------------
    def _load_candidate(self) -> Callable[..., Any]:
        from evaluator.languages import NATIVE_LANGUAGES
        from evaluator.languages.base import Context, LoadError

        job = self.job
        try:
            if job.language in NATIVE_LANGUAGES:
                from evaluator.languages import native

                if job.build is None:
                    raise RuntimeError("native candidate without a build")
                candidate = native.load(job.build, job.entry)
            else:
                from evaluator.languages import python_module

                if job.language is Language.KERNELBENCH:
                    from evaluator.build import install_load_inline_shim

                    install_load_inline_shim(job.target, job.native_cache_dir, job.pch_cache_dir)
                candidate = python_module.load(job.candidate_path)
        except LoadError as exc:
            self.report.compile_log = exc.log
            raise Stop(Verdict(exc.verdict), exc.message) from None
        self.report.compiled = True
        ctx = Context(
            device=self.dev,
            dtype=self.dtype,
            init_inputs=self.init_inputs,
            seed=job.seed,
            reference=self.reference,
        )
        try:
            return candidate.instantiate(ctx)
        except Exception as exc:  # noqa: BLE001
            raise Stop(
                Verdict.RUNTIME_ERROR,
                f"constructing ModelNew raised {exception_line(exc)}",
                traceback.format_exc(),
            ) from None

    def _call(self, fn: Callable[..., Any], inputs: list[Any], where: str) -> Any:
        try:
            out = fn(*inputs)
            self.sync()  # asynchronous device errors surface here, still attributed to the candidate
            return out
        except Exception as exc:  # noqa: BLE001
            raise Stop(
                Verdict.RUNTIME_ERROR,
                f"the kernel raised {exception_line(exc)} ({where})",
                traceback.format_exc(),
            ) from None

    def _correctness(self, fn: Callable[..., Any]) -> bool:
        from evaluator.correctness import (
            clone_tree,
            poison_free_memory,
            same_values,
            tensors_in,
        )

        torch, job = self.torch, self.job
        atol, rtol = job.settings.atol, job.settings.rtol
        passed, max_abs, max_rel, message = 0, 0.0, 0.0, None
        run = 0
        for trial in range(job.trials):
            run += 1
            where = f"correctness trial {trial + 1}/{job.trials}"
            self.mark(where)
            inputs = self.make_inputs(job.seed + 1 + trial)
            pristine = clone_tree(inputs)
            input_bytes = sum(t.numel() * t.element_size() for t in tensors_in(inputs))
            poison_free_memory(self.dev, 2 * input_bytes + (64 << 20))
            with torch.no_grad():
                out = self._call(fn, inputs, where)
            if INPUT_MODIFIED not in self.flags and not same_values(inputs, pristine):
                self.flags.append(INPUT_MODIFIED)
            del inputs
            result = self.compare_with_reference(out, pristine)
            del out, pristine
            max_abs, max_rel = max(max_abs, result.max_abs_err), max(max_rel, result.max_rel_err)
            if not result.ok:
                message = f"{where}: {result.message}"
                break
            passed += 1
        self.report.correctness = Correctness(
            trials=run,
            passed=passed,
            max_abs_err=max_abs,
            max_rel_err=max_rel,
            atol=atol,
            rtol=rtol,
            message=message,
            seeds=[job.seed + 1 + t for t in range(run)],
        )
        if message:
            self.report.message = message
        return message is None

    # -- integrity (evaluator/integrity.py) ----------------------------------------------------
    def _integrity(self, fn: Callable[..., Any], correct: bool, guard: Any) -> None:
        from evaluator import integrity

        job = self.job
        self.mark("integrity checks")
        try:
            with self.torch.no_grad():
                checks = integrity.run_checks(
                    fn,
                    self.reference,
                    self.make_inputs,
                    device=self.torch.device(self.dev),
                    seeds=(job.seed + 10_001, job.seed + 10_002),
                    atol=job.settings.atol,
                    rtol=job.settings.rtol,
                    snapshot=guard.snapshot,
                )
        except ProblemFailure:
            raise
        except Exception as exc:  # noqa: BLE001
            self.flags += guard.verify()
            if not correct:
                return  # already incorrect; the checks add nothing a crash would tell
            raise Stop(
                Verdict.RUNTIME_ERROR,
                f"the kernel raised {exception_line(exc)} (integrity checks)",
                traceback.format_exc(),
            ) from None
        details = dict(checks.details)
        if integrity.MONKEY_PATCHED in self.flags or integrity.MONKEY_PATCHED in checks.flags:
            details[integrity.MONKEY_PATCHED] = ", ".join(guard.changed[:10]) or details.get(
                integrity.MONKEY_PATCHED, ""
            )
        self._add_integrity_flags(checks.flags, details)

    def _add_integrity_flags(self, flags: list[str], details: dict[str, str]) -> None:
        for flag in flags:
            if flag not in self.flags:
                self.flags.append(flag)
            if details.get(flag):
                _log(f"integrity: {flag}: {details[flag]}")

    def fresh_inputs(self) -> tuple[int, list[Any]]:
        """A new input set under a secret seed: drawn here, after the candidate was loaded, so
        neither the job file nor anything the candidate computed ahead can know it."""
        seed = secrets.randbelow(1 << 31)
        return seed, self.make_inputs(seed, sync=False)

    def compare_with_reference(self, out: Any, pristine: list[Any]) -> Any:
        """The reference on `pristine` inputs (computed now, after the candidate's call, and
        overwritten before it is freed) compared with `out`: a correctness.Comparison."""
        from evaluator.correctness import Comparison, compare, scrub

        try:
            with self.torch.no_grad():
                ref = self.reference(*pristine)
            self.sync()
        except Exception as exc:  # noqa: BLE001
            raise ProblemFailure(f"the reference Model's forward raised {exception_line(exc)}") from exc
        try:
            result = compare(out, ref, self.job.settings.atol, self.job.settings.rtol)
        except Exception as exc:  # noqa: BLE001  exotic output objects
            result = Comparison(ok=False, message=f"the output cannot be compared: {exception_line(exc)}")
        scrub(ref)
        return result

    def check_outputs(self, seed: int, out: Any) -> str | None:
        """Compare one timed call's outputs with the reference on the same seed's inputs, made
        again (the candidate may have written to the ones it was given)."""
        result = self.compare_with_reference(out, self.make_inputs(seed))
        return None if result.ok else result.message or "outputs differ from the reference"

    def _time(self, fn: Callable[..., Any]) -> None:
        from evaluator.timing import TIMED_OUTPUT_MISMATCH, Subject, time_subject

        subject = Subject(call=lambda inputs: fn(*inputs), fresh=self.fresh_inputs, check=self.check_outputs)
        try:
            with self.torch.no_grad():
                stats = time_subject(subject, self.job.timing, self.dev)
        except (ProblemFailure, Stop):
            raise
        except Exception as exc:  # noqa: BLE001
            raise Stop(
                Verdict.RUNTIME_ERROR,
                f"the kernel raised {exception_line(exc)} (timing)",
                traceback.format_exc(),
            ) from None
        if TIMED_OUTPUT_MISMATCH in stats.flags:
            self._add_integrity_flags(
                [TIMED_OUTPUT_MISMATCH], {TIMED_OUTPUT_MISMATCH: f"a timed call: {stats.mismatch}"}
            )
            return  # no numbers: they timed something other than the checked kernel
        self.flags.extend(stats.flags)
        self.report.timing = Timing(**stats.as_result())


def preload() -> None:
    """Import what the run will import. A failure is left for the run's own import phase, which
    raises it again where it is reported."""
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001
            return


def _read_go_line() -> bool:
    """Block until the parent releases this spare (a line) or discards it (EOF)."""
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(0, 1)  # unbuffered: nothing past the line is taken from the pipe
        if not chunk:
            break
        line += chunk
    # The candidate runs in this process: it reads an empty stdin, never the parent's pipe.
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return line.endswith(b"\n")


def await_job(job_path: Path, spawned_at: float | None) -> int:
    before: dict[str, float] = {}
    if spawned_at is not None:
        before["spare_start"] = max(0.0, time.time() - spawned_at)
    start = time.perf_counter()
    preload()
    before["spare_import"] = time.perf_counter() - start
    with contextlib.suppress(OSError):
        job_path.with_name(SPARE_READY).touch()
    if not _read_go_line():
        return 0  # discarded before a job arrived: nothing to report
    return run_job(job_path, before)


def run_job(job_path: Path, before_job: dict[str, float] | None = None) -> int:
    job = RunJob.model_validate_json(job_path.read_text())
    report = Runner(job, before_job).run()
    report.finished_at = time.time()
    tmp = job.report_path.with_suffix(".tmp")
    tmp.write_text(report.model_dump_json())
    tmp.replace(job.report_path)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: atexit hooks and destructors are the candidate's code, and a
    # device left in an error state can hang at exit. The report is already written.
    os._exit(0)


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def main(argv: list[str]) -> int:
    match argv:
        case [job] if not job.startswith("-"):
            return run_job(Path(job))
        case ["--await-job", job]:
            return await_job(Path(job), None)
        case ["--await-job", job, "--spawned-at", at] if _is_float(at):
            return await_job(Path(job), float(at))
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
