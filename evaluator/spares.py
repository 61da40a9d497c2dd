"""Spare run children, started before the jobs they will serve (issue #2: latency; #12: a
backlog needs several).

A spare is `python -m evaluator.runner --await-job JOB.json` started in the sandbox a plain run
child would get — the same scrubbed env, limits, namespaces and binds, keyed by `SpareConfig` —
that imports torch and the evaluator while the worker waits for its next job, then blocks on its
stdin. Only then does the parent write the job into the spare's own scratch and release it; the
wall-clock limit counts from the release.

Why it is as safe as a plain run: before the release it has run only kjudge's code, and no
candidate code or job data exists in its scratch; it serves exactly one evaluation and is never
reused (a new one is started afterwards, in a fresh sandbox and scratch); a spare whose config
differs from the job's, or that died, is killed and the plain path is used. The one per-candidate
bind a spare cannot have at spawn time, the compiled module's directory, is replaced by a copy of
the module in its scratch (a copy, not a hard link: scratch is writable, the cache must not be).

Off unless `enable(True)` (evaluator.api.enable_spares, called by the worker at start-up): a
one-shot caller such as `kjudge eval` must not leave a process behind. Spares die with the
process: killed at exit (atexit), and bwrap's `--die-with-parent` kills a sandbox whose starting
thread is gone (so start them from a long-lived thread; a dead spare is only discarded).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from evaluator.result import Backend
from evaluator.runner import SPARE_READY
from evaluator.sandbox import Limits, SandboxProcess, SandboxRun, start_sandboxed

# child_env is rendered with this in place of the scratch dir for the config (a spare's scratch
# is its own); the spawn puts the spare's scratch back in.
SCRATCH_PLACEHOLDER = "/kjudge-spare-scratch-placeholder"
GO_LINE = b"go\n"


class SpareConfig(BaseModel):
    """Everything a run child's sandbox depends on. A spare serves only a job whose config is
    equal to the one it was started with."""

    model_config = ConfigDict(frozen=True)

    python: str
    gpu: bool
    backend: Backend
    env: dict[str, str]  # child_env with SCRATCH_PLACEHOLDER for the scratch dir
    sandbox_env: dict[str, str]  # the operator's sandbox settings, read when a sandbox starts
    cache_dir: Path
    scratch_root: Path | None
    limits: Limits
    writable_paths: tuple[Path, ...]
    readonly_paths: tuple[Path, ...] = ()

    def env_for(self, scratch: Path) -> dict[str, str]:
        return {k: v.replace(SCRATCH_PLACEHOLDER, str(scratch)) for k, v in self.env.items()}


class SpareStats(BaseModel):
    started: int = 0
    used: int = 0  # released to serve an evaluation
    discarded: int = 0  # killed unused: another config, dead, or spares turned off / exit
    failed: int = 0  # could not be started (no sandbox, or an error: last_error)
    last_error: str | None = None


@dataclass
class Spare:
    config: SpareConfig
    scratch: Path
    job_path: Path
    process: SandboxProcess
    spawned_at: float  # time.time() at the spawn

    def ready(self) -> bool:
        """The spare finished its imports (it touches a file beside its job)."""
        return self.job_path.with_name(SPARE_READY).exists()

    def release(self) -> None:
        self.process.release(GO_LINE)

    def discard(self) -> None:
        self.process.discard()
        shutil.rmtree(self.scratch, ignore_errors=True)


def spawn(config: SpareConfig, cpus: Sequence[int] | None = None) -> Spare | None:
    """Start a spare for `config` (on `cpus` when given); None when no sandbox could be started."""
    scratch = Path(tempfile.mkdtemp(prefix="kjudge-eval-", dir=config.scratch_root)).resolve()
    job_path = scratch / "job.json"
    spawned_at = time.time()
    argv = [config.python, "-m", "evaluator.runner", "--await-job", str(job_path)]
    started = start_sandboxed(
        [*argv, "--spawned-at", repr(spawned_at)],
        scratch=scratch,
        limits=config.limits,
        gpu=config.gpu,
        env=config.env_for(scratch),
        writable_paths=config.writable_paths,
        readonly_paths=config.readonly_paths,
        cpus=cpus,
    )
    if isinstance(started, SandboxRun):
        shutil.rmtree(scratch, ignore_errors=True)
        return None
    return Spare(config, scratch, job_path, started, spawned_at)


class SparePool:
    """Up to `size` spares for the configuration of the last run. Thread-safe.

    One spare is not enough under a backlog: a spare imports for ~4.5 s (torch, dynamo) and a
    small problem's GPU stage takes ~1 s, so back-to-back jobs waited for the one spare started
    at the previous claim (the H200 throughput run at f7205c2: run stage 5.2 s, its work 0.6 s).
    With `cpus` (cores outside this run stage's own: the compile cores), spares import there, so
    several importing at once never share the cores a running candidate's timing measures, and a
    claimed spare is moved onto the claiming thread's cores before it is released."""

    def __init__(self, spawner: Callable[..., Spare | None] = spawn) -> None:
        self._spawner = spawner
        self._lock = threading.Lock()
        self._enabled = False
        self._size = 1
        self._cpus: tuple[int, ...] | None = None
        self._spares: list[Spare] = []  # oldest first
        self._wanted: SpareConfig | None = None
        self._atexit = False
        self.stats = SpareStats()
        pool = weakref.ref(self)  # a weak one: the fork hook must not keep a test's pool alive
        os.register_at_fork(after_in_child=lambda: _after_fork(pool()))

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def size(self) -> int:
        return self._size

    def enable(self, on: bool, size: int = 1, cpus: Sequence[int] | None = None) -> None:
        with self._lock:
            self._enabled = on
            self._size = max(1, size)
            self._cpus = tuple(cpus) if cpus else None
            if on and not self._atexit:
                atexit.register(self.discard)
                self._atexit = True
        if not on:
            self.discard()

    def claim(self, config: SpareConfig) -> Spare | None:
        """A waiting spare that matches `config` and is alive, a ready one first (the caller then
        owns it: release and finish, or discard); else None. Spares that do not fit or died are
        killed. Remembers `config` for the next `refill`."""
        with self._lock:
            if not self._enabled:
                return None
            self._wanted = config
            waiting, self._spares = self._spares, []
        usable = [s for s in waiting if s.config == config and s.process.alive()]
        for spare in waiting:
            if spare not in usable:
                self._discard(spare)
        chosen = next((s for s in usable if s.ready()), usable[0] if usable else None)
        with self._lock:
            self._spares = [s for s in usable if s is not chosen] + self._spares
            if chosen is not None:
                self.stats.used += 1
        if chosen is not None and self._cpus:
            chosen.process.pin(os.sched_getaffinity(0))  # the run gets this stage's own cores
        return chosen

    def refill(self) -> None:
        """Start spares for the last claimed config until `size` wait. Returns at once: the
        children import while the worker runs or waits for its next job."""
        with self._lock:
            if not self._enabled or self._wanted is None:
                return
            while len(self._spares) < self._size:
                try:
                    spare = self._spawner(self._wanted, self._cpus)
                except Exception as exc:  # noqa: BLE001  a spare only saves time: never fail a job over it
                    self.stats.failed += 1
                    self.stats.last_error = f"{type(exc).__name__}: {exc}"[:300]
                    return
                if spare is None:
                    self.stats.failed += 1
                    return
                self._spares.append(spare)
                self.stats.started += 1

    def waiting(self) -> Spare | None:
        """The spare the next claim would prefer (the oldest), if any."""
        spares = self._spares
        return spares[0] if spares else None

    def count(self) -> int:
        return len(self._spares)

    def wait_ready(self, timeout_s: float) -> bool:
        """Block until the oldest waiting spare has imported everything (benchmarks: a worker
        between jobs). False when none waits or it is not ready in time."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            spare = self.waiting()
            if spare is None or not spare.process.alive():
                return False
            if spare.ready():
                return True
            time.sleep(0.05)
        return False

    def discard(self) -> None:
        """Kill every waiting spare."""
        with self._lock:
            spares, self._spares = self._spares, []
        for spare in spares:
            self._discard(spare)

    def _discard(self, spare: Spare) -> None:
        spare.discard()
        with self._lock:
            self.stats.discarded += 1

    def forget_after_fork(self) -> None:
        # The spares are the parent's children: a forked process must neither use nor kill them.
        self._lock = threading.Lock()
        self._spares = []


def _after_fork(pool: SparePool | None) -> None:
    if pool is not None:
        pool.forget_after_fork()
