"""Baselines: the reference timed eagerly and under torch.compile, with the candidate's protocol.

Measured in the runner child (`measure`) before the candidate is imported, so nothing the
candidate does can slow or speed up its own yardstick; cached by the parent (`BaselineCache`)
per (problem id, device name, torch version), so a problem's baselines are measured once per
device type and PyTorch release.
"""

from __future__ import annotations

import hashlib
import os
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from evaluator.options import TimingOptions
from evaluator.result import Timing

EAGER = "eager"
COMPILE = "compile"


class BaselineEntry(BaseModel):
    eager_ms: float | None = None
    compile_ms: float | None = None
    device: str
    torch_version: str
    problem_id: str
    # How each was measured (evaluator.result.Timing as a dict: spread, method, samples), kept
    # so that a reader can judge the yardstick; contended measurements are never stored.
    conditions: dict[str, Any] = Field(default_factory=dict)


class BaselineCache:
    def __init__(self, cache_dir: Path) -> None:
        self.root = cache_dir / "baselines"

    def path(self, problem_id: str, device: str, torch_version: str) -> Path:
        key = hashlib.sha256(f"{device}\0{torch_version}".encode()).hexdigest()[:16]
        return self.root / f"{problem_id}-{key}.json"

    def load(self, problem_id: str, device: str, torch_version: str) -> BaselineEntry | None:
        try:
            return BaselineEntry.model_validate_json(self.path(problem_id, device, torch_version).read_text())
        except (OSError, ValueError):
            return None

    def store(self, entry: BaselineEntry) -> None:
        """Merge into what is cached (a run may have measured only one of the two)."""
        old = self.load(entry.problem_id, entry.device, entry.torch_version)
        if old is not None:
            entry = entry.model_copy(
                update={
                    "eager_ms": entry.eager_ms if entry.eager_ms is not None else old.eager_ms,
                    "compile_ms": entry.compile_ms if entry.compile_ms is not None else old.compile_ms,
                    "conditions": {**old.conditions, **entry.conditions},
                }
            )
        path = self.path(entry.problem_id, entry.device, entry.torch_version)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(entry.model_dump_json())
        tmp.replace(path)


def installed_torch_version() -> str | None:
    """torch's version without importing torch (the parent stays light)."""
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def missing(entry: BaselineEntry | None, want_compile: bool) -> list[str]:
    """Which baselines still need measuring."""
    needed = []
    if entry is None or entry.eager_ms is None:
        needed.append(EAGER)
    if want_compile and (entry is None or entry.compile_ms is None):
        needed.append(COMPILE)
    return needed


def measure(
    which: list[str],
    reference: Any,
    fresh: Callable[[], tuple[int, list[Any]]],
    opts: TimingOptions,
    device: str,
    log: Callable[[str], None],
) -> tuple[dict[str, float], dict[str, Timing]]:
    """In the child: ({"eager_ms": ..., "compile_ms": ...}, how each was measured) for the
    requested baselines, timed by the candidate's protocol (fresh inputs per call, same method
    choice, same L2 policy); the reference is trusted, so its outputs are not checked.

    A failing torch.compile is not the problem's fault (inductor lacks some ops, or a compiler
    is missing): its baseline is left out and the reason logged. A failing eager reference is
    the problem's own failure and propagates.
    """
    import torch

    from evaluator.timing import Subject, time_subject

    times: dict[str, float] = {}
    how: dict[str, Timing] = {}

    def measure_one(name: str, fn: Callable[..., Any]) -> None:
        stats = time_subject(Subject(call=lambda inputs: fn(*inputs), fresh=fresh), opts, device)
        times[f"{name}_ms"] = stats.median_ms
        how[name] = Timing(**stats.as_result())

    with torch.no_grad():
        if EAGER in which:
            measure_one(EAGER, reference)
        if COMPILE in which:
            try:
                measure_one(COMPILE, torch.compile(reference))
            except Exception as exc:  # noqa: BLE001
                log(
                    "torch.compile baseline failed, left out: "
                    + "".join(traceback.format_exception_only(exc)).strip()
                )
            finally:
                torch._dynamo.reset()  # compiled graphs hold references to the model and inputs
    return times, how
