"""Which Celery queue a submission goes to, which queues a worker listens on, and the task names.

One module pins the naming so the API (producer) and the workers (consumers) can never disagree:

    target (as submitted)        queue
    cpu                          eval.cpu
    cuda / rocm                  eval.cuda / eval.rocm
    sm_90, sm_100a, ...          eval.cuda.sm_90, ...
    gfx942, gfx950, ...          eval.hip.gfx942, ...
    x86_64, aarch64              eval.cpu.x86_64, ...
    any (the default)            eval.any    (any GPU worker; the embedded worker takes it too)

A worker for an sm_90 GPU listens on eval.cuda.sm_90, eval.cuda and eval.any; the same holds
for ROCm (eval.hip.<arch>, eval.rocm, eval.any) and CPU (eval.cpu.<isa>, eval.cpu).
This module must stay import-light: the API imports it on every request path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# The task names, the other half of the wire contract.
TASK_NAME = "kjudge.evaluate"
# The run stage of a pipelined host (worker/pipeline.py): sent by its compile pool only.
RUN_TASK_NAME = "kjudge.run"

ANY_TARGET = "any"
ANY_QUEUE = "eval.any"

_GENERIC = {"cpu": "eval.cpu", "cuda": "eval.cuda", "rocm": "eval.rocm"}
_ARCH_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^sm_\d{2,3}[a-z]?$"), "eval.cuda.{arch}"),
    (re.compile(r"^gfx[0-9a-f]{3,4}$"), "eval.hip.{arch}"),
    (re.compile(r"^(x86_64|aarch64)$"), "eval.cpu.{arch}"),
]


class UnknownTarget(ValueError):
    """The target string names no backend or architecture kjudge knows."""


def normalize_target(target: str | None) -> str:
    """Lower-cases and trims; None or '' mean the default, 'any'."""
    value = (target or ANY_TARGET).strip().lower()
    return value or ANY_TARGET


def queue_for_target(target: str | None) -> str:
    """The Celery queue a submission with this target is sent to.

    Raises UnknownTarget (a ValueError) with a message that lists what is accepted.
    """
    value = normalize_target(target)
    if value == ANY_TARGET:
        return ANY_QUEUE
    if value in _GENERIC:
        return _GENERIC[value]
    for pattern, template in _ARCH_PATTERNS:
        if pattern.match(value):
            return template.format(arch=value)
    raise UnknownTarget(
        f"unknown target {target!r}: use 'any', 'cpu', 'cuda', 'rocm', a CUDA arch such as 'sm_90', "
        "a ROCm arch such as 'gfx942', or a CPU ISA such as 'x86_64'"
    )


def is_known_target(target: str | None) -> bool:
    try:
        queue_for_target(target)
    except UnknownTarget:
        return False
    return True


def queues_for_worker(backend: str, arch: str, *, take_any: bool | None = None) -> list[str]:
    """The queues a worker of this backend/arch consumes, most specific first.

    GPU workers take 'any' by default; a CPU worker takes it only when asked (the embedded
    `kjudge serve` worker on a machine without a GPU), because 'any' means "any GPU" in
    production.
    """
    backend = backend.lower()
    if backend == "cpu":
        # Any host ISA is fine for CPU work; an unusual one just gets its own queue name.
        queues = [f"eval.cpu.{arch.lower()}", "eval.cpu"]
        take_any = bool(take_any)
    elif backend == "cuda":
        queues = [queue_for_target(arch), "eval.cuda"]
    elif backend == "rocm":
        queues = [queue_for_target(arch), "eval.rocm"]
    else:
        raise UnknownTarget(f"unknown worker backend {backend!r}: use cpu, cuda or rocm")
    if take_any is None or take_any:
        queues.append(ANY_QUEUE)
    return _unique(queues)


def _unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)
