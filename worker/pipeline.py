"""How one host is laid out as a pipeline: a shared compile pool ahead of one run stage per GPU.

    eval.<target> ──▶ compile pool (P processes, nice, on the compile cores)
                        claim → prebuild → compile error? finish : hand off ──▶ run.<host>.<target>
                                                                                  │
                      run stage per GPU (concurrency 1, its own reserved cores) ◀─┘
                        take over → load, correctness, integrity, timing → finish

The API keeps sending `kjudge.evaluate` to the target's queue; on a pipelined host the compile
pool consumes those queues and the run stages consume only their host's `run.*` queue, where the
build is in the host's cache. This module is the arithmetic (which cores, how many compiles)
and the naming; worker/compile_stage.py and worker/tasks.py do the work.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from pydantic import BaseModel, Field

# Cores a run stage keeps to itself: the worker's pool process and its run child (the candidate's
# host thread, torch's launch path); CPU-target timing runs here too.
CORES_PER_RUN_STAGE = 2
# A CUDA compile (cudafe++, cicc, host g++; pybind glue beside it) peaks near 1.5 GiB.
MEMORY_PER_COMPILE_BYTES = 2 << 30
# Compiles yield the CPU to the run stages and the API.
COMPILE_NICE = 10
# Spare run children a GPU run stage keeps importing (on the compile cores). Under a backlog every
# GPU stage (~1.5-2 s for a small problem) uses one, and a spare imports for ~9.6 s on a 16-core
# host whose compile pool is busy (the H100 throughput run at cc778d6): four supplied one every
# ~2.4 s, so jobs waited on imports with the GPU idle (busy 0.475, 2.8 s a job against a 2.05 s
# mean GPU stage). Eight supply one every ~1.2 s. A CPU run stage keeps one: it is started only
# after its run (its imports would share the cores a CPU timing measures).
SPARES_PER_GPU_STAGE = 8
# An importing spare holds torch and dynamo, ~0.6 GiB resident; spares take at most a quarter of
# the memory the compile pool sizes itself from.
MEMORY_PER_SPARE_BYTES = 1 << 30


class StageTarget(BaseModel):
    """One device kind of this host as the compile pool sees it: the queues whose jobs it builds
    for, where their runs go, and the visibility variables its run stage runs under (so the
    compile pool's target probe is the run stage's, cache key for cache key)."""

    backend: str  # cpu | cuda | rocm
    arch: str
    queues: list[str]  # eval.* queues served
    run_queue: str
    visibility: dict[str, str] = Field(default_factory=dict)

    @property
    def device(self) -> str:
        return "cpu" if self.backend == "cpu" else "cuda"


def run_queue(host: str, backend: str, arch: str) -> str:
    """The queue a host's compile pool hands built jobs to; only that host's run stages consume it
    (the build is in that host's cache)."""
    return f"run.{host}.{backend}.{arch}".lower()


def target_for_queue(queue: str, targets: Sequence[StageTarget]) -> StageTarget | None:
    """The device kind a job from `queue` is built for: the first that serves the queue (the
    launcher lists the GPUs first, so 'any' goes to a GPU)."""
    for target in targets:
        if queue in target.queues:
            return target
    return None


def dump_targets(targets: Sequence[StageTarget]) -> str:
    return json.dumps([t.model_dump() for t in targets])


def load_targets(text: str | None) -> list[StageTarget]:
    return [StageTarget.model_validate(item) for item in json.loads(text or "[]")]


class CpuPlan(BaseModel):
    """Cores for each run stage (disjoint), the cores the compile pool runs on, its size."""

    run_cpus: list[list[int]]
    compile_cpus: list[int]
    compile_pool: int


def plan_cpus(
    cpus: Sequence[int],
    run_stages: int,
    memory_bytes: int,
    *,
    cores_per_run: int = CORES_PER_RUN_STAGE,
    memory_per_compile: int = MEMORY_PER_COMPILE_BYTES,
    service_cores: int = 1,
    pool_override: int | None = None,
) -> CpuPlan:
    """Reserve the highest-numbered cores for the run stages (core 0 takes most interrupts), at
    most `cores_per_run` each and always leaving one core to compile; the compile pool gets the
    rest, one compile per core less `service_cores` for the API and the broker, bounded by memory.

    16 cores, 1 GPU: run stage on 14-15, compiles on 0-13, pool 13 (memory permitting).
    2 cores, 1 stage (CI): run stage on 1, compiles on 0, pool 1.
    """
    ordered = sorted(set(cpus))
    if not ordered:
        raise ValueError("no CPU to plan with")
    per_run = max(1, min(cores_per_run, (len(ordered) - 1) // max(run_stages, 1))) if run_stages else 0
    run_cpus: list[list[int]] = []
    top = len(ordered)
    for _ in range(run_stages):
        if top - per_run >= 1:
            run_cpus.append(ordered[top - per_run : top])
            top -= per_run
        else:  # more stages than cores: they share the last one rather than the compile cores
            run_cpus.append(ordered[-1:])
    compile_cpus = ordered[:top] or ordered
    by_cores = (
        len(compile_cpus) - service_cores if len(compile_cpus) > service_cores + 1 else len(compile_cpus)
    )
    by_memory = max(1, memory_bytes // memory_per_compile)
    pool = pool_override if pool_override else max(1, min(by_cores, by_memory))
    return CpuPlan(run_cpus=run_cpus, compile_cpus=compile_cpus, compile_pool=pool)


def spares_per_gpu_stage(memory_bytes: int, run_stages: int) -> int:
    """How many spares each GPU run stage keeps: SPARES_PER_GPU_STAGE, fewer where memory is
    short (at least one)."""
    by_memory = memory_bytes // 4 // (max(run_stages, 1) * MEMORY_PER_SPARE_BYTES)
    return max(1, min(SPARES_PER_GPU_STAGE, by_memory))


def available_cpus() -> list[int]:
    """The cores this process may use (a container's cpuset, not the machine's count)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def available_memory() -> int:
    """MemAvailable (what compiles can take without swapping), or the physical total."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def parse_cpus(text: str | None) -> list[int]:
    """'0-3,8' → [0, 1, 2, 3, 8]."""
    found: list[int] = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            found.extend(range(int(lo), int(hi) + 1))
        else:
            found.append(int(part))
    return sorted(set(found))


def format_cpus(cpus: Sequence[int]) -> str:
    return ",".join(str(c) for c in cpus)


def apply_placement(cpus: Sequence[int], nice: int) -> None:
    """Pin this process (and so everything it starts: pool processes, run children, compilers)
    to `cpus` and lower its priority by `nice`. Called before exec by the launcher."""
    if cpus:
        os.sched_setaffinity(0, set(cpus))
    if nice:
        os.nice(nice)
