"""One Celery worker process per GPU, each pinned with CUDA_VISIBLE_DEVICES (NVIDIA) or
ROCR_VISIBLE_DEVICES (ROCm, with HIP_/CUDA_VISIBLE_DEVICES removed: evaluator/targets/rocm.py).

Why processes and not Celery concurrency: a pinned process sees exactly one device (as device 0),
so a crashing or hanging evaluation can only ever affect its own GPU, and each process consumes
only the queues its GPU can serve. Every child runs `celery -A worker.celery_app worker` with
concurrency 1 and prefetch 1 (late acks: at most one message in flight per GPU).

The Supervisor restarts a child that died (with backoff) and forwards SIGTERM/SIGINT.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from core.queues import queues_for_worker
from evaluator.targets import rocm as rocm_target
from worker import pipeline
from worker.config import DRAINED_EXIT
from worker.devices import Gpu, host_isa

log = logging.getLogger(__name__)


class WorkerSpec(BaseModel):
    """One child process to run."""

    name: str  # Celery node name prefix, unique on this host
    backend: str
    arch: str
    device_name: str = ""
    gpu: Gpu | None = None
    queues: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    # The pipeline (worker/pipeline.py): which stage, how many processes, where it runs.
    stage: Literal["all", "compile", "run"] = "all"
    concurrency: int = 1
    cpus: list[int] = Field(default_factory=list)  # empty: wherever the launcher may run
    nice: int = 0

    def child_env(self, base: dict[str, str]) -> dict[str, str]:
        env = dict(base)
        env.update(self.env)
        env["KJUDGE_WORKER_BACKEND"] = self.backend
        env["KJUDGE_WORKER_ARCH"] = self.arch
        env["KJUDGE_WORKER_DEVICE_NAME"] = self.device_name
        env["KJUDGE_WORKER_QUEUES"] = ",".join(self.queues)
        env["KJUDGE_WORKER_STAGE"] = self.stage
        if self.gpu is not None:
            env["KJUDGE_WORKER_GPU"] = self.gpu.visible_id
            if self.backend == "rocm":
                env = rocm_target.pinned_env(env, self.gpu.visible_id)
            else:
                env["CUDA_VISIBLE_DEVICES"] = self.gpu.visible_id
        else:
            env.pop("KJUDGE_WORKER_GPU", None)
            # A CPU worker must not grab a GPU by accident.
            env["CUDA_VISIBLE_DEVICES"] = ""
            env["HIP_VISIBLE_DEVICES"] = ""
        return env


class LaunchError(ValueError):
    """Bad --gpus/--queues: the message says what exists."""


def parse_gpu_selection(selection: str, gpus: Sequence[Gpu]) -> list[Gpu]:
    """'all' or a comma list of indices (as torch sees them here) → the GPUs to start."""
    if selection.strip().lower() == "all":
        if not gpus:
            raise LaunchError("--gpus all: no GPU is visible to PyTorch on this machine; use --cpu")
        return list(gpus)
    chosen: list[Gpu] = []
    by_index = {g.index: g for g in gpus}
    for part in selection.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or int(part) not in by_index:
            have = ", ".join(str(i) for i in by_index) or "none"
            raise LaunchError(f"--gpus {selection}: GPU {part!r} does not exist (visible GPUs: {have})")
        chosen.append(by_index[int(part)])
    if not chosen:
        raise LaunchError("--gpus needs 'all' or a list such as 0,1")
    return chosen


def gpu_spec(gpu: Gpu, queues: list[str] | None = None, extra_queues: Sequence[str] = ()) -> WorkerSpec:
    q = queues or queues_for_worker(gpu.backend, gpu.arch)
    return WorkerSpec(
        name=f"gpu{gpu.visible_id}",
        backend=gpu.backend,
        arch=gpu.arch,
        device_name=gpu.name,
        gpu=gpu,
        queues=_unique([*q, *extra_queues]),
    )


def cpu_spec(queues: list[str] | None = None, take_any: bool = False, name: str = "cpu") -> WorkerSpec:
    arch = host_isa()
    q = queues or queues_for_worker("cpu", arch, take_any=take_any)
    return WorkerSpec(name=name, backend="cpu", arch=arch, device_name=f"CPU ({arch})", queues=q)


def embedded_spec(gpus: Sequence[Gpu]) -> WorkerSpec:
    """`kjudge serve`'s single local worker: GPU 0 if there is one, else the CPU, and every queue
    that device can serve — CPU targets and 'any' included — so a submission never waits for a
    worker that does not exist."""
    arch = host_isa()
    cpu_queues = queues_for_worker("cpu", arch, take_any=True)
    if gpus:
        return gpu_spec(gpus[0], extra_queues=cpu_queues)
    return cpu_spec(take_any=True)


def pipelined(specs: Sequence[WorkerSpec], pool_size: int | None = None) -> list[WorkerSpec]:
    """One host as a pipeline: the device workers become run stages (one per GPU, each on cores
    of its own, consuming only this host's run queue of its target) and one compile pool, sized
    from the cores and memory left, consumes every eval queue they served."""
    host = os.environ.get("KJUDGE_WORKER_HOST") or socket.gethostname()
    memory = pipeline.available_memory()
    plan = pipeline.plan_cpus(pipeline.available_cpus(), len(specs), memory, pool_override=pool_size)
    gpu_spares = pipeline.spares_per_gpu_stage(memory, len(specs))
    targets: dict[str, pipeline.StageTarget] = {}
    runs: list[WorkerSpec] = []
    for spec, cores in zip(specs, plan.run_cpus, strict=True):
        own = _stage_targets(spec, host)
        for target in own:
            known = targets.setdefault(target.run_queue, target)
            known.queues = _unique([*known.queues, *target.queues])
        defaults = {
            "KJUDGE_WORKER_SPARES": str(gpu_spares if spec.backend != "cpu" else 1),
            "KJUDGE_WORKER_SPARE_CPUS": pipeline.format_cpus(plan.compile_cpus),
        }
        spares = {k: v for k, v in defaults.items() if k not in os.environ}  # the operator's win
        runs.append(
            spec.model_copy(
                update={
                    "stage": "run",
                    "queues": [t.run_queue for t in own],
                    "cpus": cores,
                    "env": {**spares, **spec.env},
                }
            )
        )
    ordered = sorted(targets.values(), key=lambda t: t.backend == "cpu")  # 'any' goes to a GPU
    compile_spec = WorkerSpec(
        name="compile",
        backend="cpu",
        arch=host_isa(),
        device_name="compile pool",
        queues=_unique([q for t in ordered for q in t.queues]),
        env={"KJUDGE_WORKER_STAGE_TARGETS": pipeline.dump_targets(ordered)},
        stage="compile",
        concurrency=plan.compile_pool,
        cpus=plan.compile_cpus,
        nice=pipeline.COMPILE_NICE,
    )
    return [compile_spec, *runs]


def _stage_targets(spec: WorkerSpec, host: str) -> list[pipeline.StageTarget]:
    """What a device worker served, split by device kind: a GPU worker that also takes CPU
    queues (`kjudge serve`'s) runs CPU targets too, from a run queue of their own."""
    cpu_queues = [q for q in spec.queues if q.startswith("eval.cpu")]
    out: list[pipeline.StageTarget] = []
    if spec.backend != "cpu":
        visibility = {k: v for k, v in spec.child_env({}).items() if k.endswith("_VISIBLE_DEVICES")}
        out.append(
            pipeline.StageTarget(
                backend=spec.backend,
                arch=spec.arch,
                queues=[q for q in spec.queues if q not in cpu_queues],
                run_queue=pipeline.run_queue(host, spec.backend, spec.arch),
                visibility=visibility,
            )
        )
        if not cpu_queues:
            return out
        arch, queues = host_isa(), cpu_queues
    else:
        arch, queues = spec.arch, list(spec.queues)
    out.append(
        pipeline.StageTarget(
            backend="cpu", arch=arch, queues=queues, run_queue=pipeline.run_queue(host, "cpu", arch)
        )
    )
    return out


def celery_argv(spec: WorkerSpec, loglevel: str = "INFO", pool: str = "prefork") -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "worker.celery_app",
        "worker",
        "--queues",
        ",".join(spec.queues),
        "--concurrency",
        str(spec.concurrency),
        "--prefetch-multiplier",
        "1",
        "--pool",
        pool,
        "--hostname",
        f"kjudge-{spec.name}@{os.environ.get('KJUDGE_WORKER_HOST') or socket.gethostname()}",
        # Mingle/gossip are cluster chatter kjudge does not use; they only slow startup.
        "--without-mingle",
        "--without-gossip",
        "--loglevel",
        loglevel,
    ]


class Supervisor:
    """Runs the children until told to stop; restarts one that dies, with backoff."""

    def __init__(
        self,
        specs: Sequence[WorkerSpec],
        loglevel: str = "INFO",
        stop_grace_s: float = 30.0,
        parent_pid: int | None = None,
    ) -> None:
        self.specs = list(specs)
        # `kjudge serve` starts the launcher in its own session and passes its pid; should serve
        # die without stopping it (kill -9), the workers must not live on as orphans.
        self._parent = parent_pid
        self.loglevel = loglevel
        self.stop_grace_s = stop_grace_s
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._backoff: dict[str, float] = {}
        self._next_start: dict[str, float] = {}
        self._stopping = False
        self.drained: set[str] = set()

    def _start(self, spec: WorkerSpec) -> None:
        argv = celery_argv(spec, self.loglevel)
        log.info("starting worker %s on queues %s", spec.name, ",".join(spec.queues))
        self.procs[spec.name] = subprocess.Popen(
            argv,
            env=spec.child_env(dict(os.environ)),
            # Before exec, so the Celery process and all it starts inherit cores and priority.
            preexec_fn=(lambda: pipeline.apply_placement(spec.cpus, spec.nice))
            if spec.cpus or spec.nice
            else None,
        )

    def _parent_alive(self) -> bool:
        return self._parent is None or os.getppid() == self._parent

    def _signal(self, signum: int, _frame: object) -> None:
        self._stopping = True

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._signal)
        signal.signal(signal.SIGINT, self._signal)
        if not self._parent_alive():
            return 0
        for spec in self.specs:
            self._start(spec)
        while not self._stopping:
            if len(self.drained) == len(self.specs):
                log.info("every worker drained; the launcher exits")
                return 0
            devices = [s for s in self.specs if s.stage != "compile"]
            if devices and len(devices) < len(self.specs) and all(s.name in self.drained for s in devices):
                # A pipelined host whose every run stage was drained: its compile pool would only
                # claim jobs that no device here will take. It finishes its builds and leaves too.
                log.info("every run stage drained; stopping the compile pool and exiting")
                return self.stop()
            if not self._parent_alive():
                log.warning("the process that started the workers is gone; stopping them")
                break
            now = time.monotonic()
            for spec in self.specs:
                if spec.name in self.drained:
                    continue
                proc = self.procs.get(spec.name)
                if proc is None:
                    if now >= self._next_start.get(spec.name, 0.0):
                        self._start(spec)
                    continue
                rc = proc.poll()
                if rc is None:
                    continue
                if rc == DRAINED_EXIT:
                    # `kjudge drain`: it finished its job and left on purpose; starting it again
                    # would undo the drain.
                    log.info("worker %s drained; not restarting it", spec.name)
                    self.drained.add(spec.name)
                    del self.procs[spec.name]
                    continue
                delay = min(self._backoff.get(spec.name, 0.5) * 2, 60.0)
                self._backoff[spec.name] = delay
                self._next_start[spec.name] = now + delay
                del self.procs[spec.name]
                log.warning("worker %s exited with %s; restarting in %.0f s", spec.name, rc, delay)
            time.sleep(0.5)
        return self.stop()

    def stop(self) -> int:
        # Celery's warm shutdown on SIGTERM: finish the current task, then exit.
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        # A trusted build a worker started (the precompiled header's g++ at start-up) is no
        # sandboxed child that dies with it: what the workers started is recorded while they
        # shut down, and whatever of it outlives them is killed.
        started: dict[int, str] = {}
        deadline = time.monotonic() + self.stop_grace_s
        for proc in self.procs.values():
            while True:
                started.update((p, _start_time(p)) for p in descendants(proc.pid) if p not in started)
                try:
                    proc.wait(timeout=min(0.5, max(deadline - time.monotonic(), 0.1)))
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() < deadline:
                        continue
                    # Cold: the message of an unfinished task is redelivered or reconciled later.
                    kill_tree(proc.pid)
                    proc.wait()
                    break
        for pid, start in started.items():
            if start and _start_time(pid) == start:  # the same process, not a reused pid
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        return 0


def descendants(pid: int) -> list[int]:
    """All live descendants of pid (Linux /proc), deepest last."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        # The command name may contain spaces and parentheses; the ppid follows the last ')'.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    frontier = [pid]
    while frontier:
        nxt = children.get(frontier.pop(), [])
        found.extend(nxt)
        frontier.extend(nxt)
    return found


def _start_time(pid: int) -> str:
    """The process's start time (field 22 of /proc/<pid>/stat), '' when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def kill_tree(pid: int) -> None:
    """SIGKILL a Celery worker and its pool processes (they outlive a killed parent)."""
    for p in [pid, *descendants(pid)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))
