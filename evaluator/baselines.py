"""Baselines: the reference timed eagerly and under torch.compile, with the candidate's protocol.

Measured in the runner child (`measure`) before the candidate is imported, so nothing the
candidate does can slow or speed up its own yardstick; cached by the parent (`BaselineCache`)
per (problem id, device name, torch version), so a problem's baselines are measured once per
device type and PyTorch release.

A cached baseline is not trusted forever: every Nth evaluation that uses it
(EvalOptions.baseline_recheck_every) re-measures it in the trusted baselines child, and
`settle_recheck` applies the rule below. A disagreeing value is replaced only when a second
re-measurement confirms the first, and never on a disturbed (`contended`) measurement; the
entry keeps its uses, its checks and a short history of what it replaced, when and why.

The agreement rule (`tolerance`, `agrees`): two medians a and b agree when
max(a, b) / min(a, b) - 1 <= min(max(3 * s, 20 %), 100 %), where s is the larger relative
spread (std_ms / median_ms of the samples, evaluator.result.Timing) of the two measurements.
Three spreads leave room for a noisy kernel's median to move; the 20 % floor is above the
cross-process max/min of the medians the timing stability bench measured (1.004 from 30 µs up,
up to 1.31 for 3-7 µs graph-batched kernels — those may still be re-measured now and then, and
are replaced only when two fresh processes agree), and the cap makes a factor of two a
disagreement however noisy the samples were.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from evaluator.options import TimingOptions
from evaluator.result import Timing

EAGER = "eager"
COMPILE = "compile"
NAMES = (EAGER, COMPILE)

# The agreement rule (module docstring).
SPREADS = 3.0
TOLERANCE_FLOOR = 0.20
TOLERANCE_CAP = 1.0
# Replacements an entry remembers.
HISTORY = 5

# What a re-check concluded (Baseline.recheck in the Result, BaselineEntry.last_check).
AGREED = "agreed"  # the re-measurement agreed: the cached values stand
REPLACED = "replaced"  # two re-measurements agreed with each other, not with the cache: replaced
UNCONFIRMED = "unconfirmed"  # disagreed, but the second re-measurement did not confirm: kept
CONTENDED = "contended"  # a re-measurement was disturbed (or failed): nothing learned, kept


class BaselineChange(BaseModel):
    """One replaced value: what it was, what replaced it, when and why."""

    name: str  # eager | compile
    old_ms: float | None
    new_ms: float
    at: float  # unix time
    reason: str
    old_conditions: dict[str, Any] = Field(default_factory=dict)


class BaselineEntry(BaseModel):
    eager_ms: float | None = None
    compile_ms: float | None = None
    device: str
    torch_version: str
    problem_id: str
    # How each was measured (evaluator.result.Timing as a dict: spread, method, samples), kept
    # so that a reader can judge the yardstick; contended measurements are never stored.
    conditions: dict[str, Any] = Field(default_factory=dict)
    measured_at: float | None = None  # unix time the values were last written
    uses: int = 0  # evaluations that used the cached values
    since_check: int = 0  # uses since the last re-check was started (or the values were written)
    checks: int = 0  # re-checks that agreed with the cached values
    last_checked_at: float | None = None
    # The last re-check: {"outcome", "at", "ratio": {name: new / cached}, "tolerance": {name: ...}}.
    last_check: dict[str, Any] = Field(default_factory=dict)
    history: list[BaselineChange] = Field(default_factory=list)  # newest last, at most HISTORY

    def value(self, name: str) -> float | None:
        return self.eager_ms if name == EAGER else self.compile_ms


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

    @contextlib.contextmanager
    def _locked(self, problem_id: str, device: str, torch_version: str) -> Iterator[Path]:
        """Read-modify-write of one entry under an exclusive lock (a host's workers share the
        cache): counters and history are not lost to a concurrent update. Never held while a
        baseline is measured."""
        path = self.path(problem_id, device, torch_version)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield path
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self, path: Path, entry: BaselineEntry) -> None:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(entry.model_dump_json())
        tmp.replace(path)

    def store(self, entry: BaselineEntry) -> None:
        """Merge newly measured values into what is cached (a run may have measured only one of
        the two); the entry's uses, checks and history are kept."""
        with self._locked(entry.problem_id, entry.device, entry.torch_version) as path:
            old = self.load(entry.problem_id, entry.device, entry.torch_version)
            if old is not None:
                entry = old.model_copy(
                    update={
                        "eager_ms": entry.eager_ms if entry.eager_ms is not None else old.eager_ms,
                        "compile_ms": entry.compile_ms if entry.compile_ms is not None else old.compile_ms,
                        "conditions": {**old.conditions, **entry.conditions},
                    }
                )
            self._write(path, entry.model_copy(update={"measured_at": time.time()}))

    def note_use(self, problem_id: str, device: str, torch_version: str, every: int) -> bool:
        """Count one evaluation that uses the cached entry; True when this one should re-check
        it (every `every`th use; 0 never). The count restarts as the re-check is handed out, so
        two workers sharing the cache do not both re-check the same use."""
        with self._locked(problem_id, device, torch_version) as path:
            entry = self.load(problem_id, device, torch_version)
            if entry is None:
                return False
            due = every > 0 and entry.since_check + 1 >= every
            entry = entry.model_copy(
                update={"uses": entry.uses + 1, "since_check": 0 if due else entry.since_check + 1}
            )
            self._write(path, entry)
            return due

    def record_check(self, entry: BaselineEntry, outcome: str, detail: dict[str, Any]) -> None:
        """A re-check that changed no value: its outcome, time and ratios."""
        with self._locked(entry.problem_id, entry.device, entry.torch_version) as path:
            current = self.load(entry.problem_id, entry.device, entry.torch_version)
            if current is None:
                return
            now = time.time()
            self._write(
                path,
                current.model_copy(
                    update={
                        "checks": current.checks + (outcome == AGREED),
                        "last_checked_at": now,
                        "last_check": {"outcome": outcome, "at": now, **detail},
                    }
                ),
            )

    def replace(
        self,
        entry: BaselineEntry,
        values: dict[str, float],
        conditions: dict[str, dict[str, Any]],
        reason: str,
        detail: dict[str, Any],
    ) -> BaselineEntry:
        """Replace the named values (name -> ms) after a confirmed disagreement; the old values
        go into the history. Returns the entry as stored."""
        with self._locked(entry.problem_id, entry.device, entry.torch_version) as path:
            current = self.load(entry.problem_id, entry.device, entry.torch_version) or entry
            now = time.time()
            changes = [
                BaselineChange(
                    name=name,
                    old_ms=current.value(name),
                    new_ms=ms,
                    at=now,
                    reason=reason,
                    old_conditions=current.conditions.get(name, {}),
                )
                for name, ms in values.items()
            ]
            stored = current.model_copy(
                update={
                    **{f"{name}_ms": ms for name, ms in values.items()},
                    "conditions": {**current.conditions, **conditions},
                    "measured_at": now,
                    "last_checked_at": now,
                    "last_check": {"outcome": REPLACED, "at": now, **detail},
                    "history": [*current.history, *changes][-HISTORY:],
                }
            )
            self._write(path, stored)
            return stored


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


# -- re-checking a cached baseline -------------------------------------------------------------

# What a baselines child reported: ({"eager_ms": ...}, {"eager": Timing}), as RunReport has them.
Measured = tuple[dict[str, float], dict[str, Timing]]


def relative_spread(conditions: dict[str, Any] | Timing | None) -> float:
    """std_ms / median_ms of one measurement's samples; 0 when unknown (an old cache entry)."""
    if isinstance(conditions, Timing):
        conditions = conditions.model_dump()
    if not conditions:
        return 0.0
    median, std = conditions.get("median_ms"), conditions.get("std_ms")
    if not median or std is None or median <= 0:
        return 0.0
    return float(std) / float(median)


def tolerance(spread_a: float, spread_b: float) -> float:
    """How far apart (max/min - 1) two medians with these relative spreads may be and agree."""
    return min(max(SPREADS * max(spread_a, spread_b), TOLERANCE_FLOOR), TOLERANCE_CAP)


def apart(a_ms: float, b_ms: float) -> float:
    """max/min - 1: 0 for equal medians, 1 for a factor of two (inf if one is not positive)."""
    lo, hi = sorted((a_ms, b_ms))
    return hi / lo - 1.0 if lo > 0 else float("inf")


def agrees(a_ms: float, b_ms: float, tol: float) -> bool:
    return apart(a_ms, b_ms) <= tol


@dataclass
class Recheck:
    """What re-checking the cached baselines `names` concluded (`settle_recheck`); `apply`
    writes it into the cache."""

    outcome: str  # AGREED | REPLACED | UNCONFIRMED | CONTENDED
    values: dict[str, float]  # name -> the ms this result uses (cached, or the replacement)
    replaced: dict[str, float] = field(default_factory=dict)  # name -> the cached ms replaced
    conditions: dict[str, dict[str, Any]] = field(default_factory=dict)  # of the replacements
    detail: dict[str, Any] = field(default_factory=dict)  # ratios and tolerances, for the entry
    note: str = ""  # one line: why, for the run log and the entry's history

    def apply(self, cache: BaselineCache, entry: BaselineEntry) -> None:
        """Record the check in the entry; on REPLACED, replace the values (history kept)."""
        if self.outcome == REPLACED:
            cache.replace(
                entry,
                {n: self.values[n] for n in self.replaced},
                self.conditions,
                self.note,
                self.detail,
            )
        else:
            cache.record_check(entry, self.outcome, self.detail)


def _usable(measured: Measured | None, names: list[str]) -> bool:
    """Every named baseline measured, none of them disturbed."""
    if measured is None:
        return False
    times, how = measured
    return all(f"{n}_ms" in times and n in how and not how[n].contended for n in names)


def settle_recheck(
    entry: BaselineEntry,
    names: list[str],
    first: Measured | None,
    again: Callable[[list[str]], Measured | None],
) -> Recheck:
    """Compare a re-measurement (`first`, from the trusted baselines child) of the cached
    baselines `names` with the entry, by the agreement rule (module docstring):

    - `first` disturbed or incomplete: nothing learned; the cache stands (CONTENDED).
    - every name agrees: the cache stands, the check is counted (AGREED).
    - some disagree: `again(those)` measures them once more, in a fresh child. Where the second
      agrees with the first, the second replaces the cached value (REPLACED); otherwise, or if
      the second was disturbed, the cache stands (UNCONFIRMED / CONTENDED).

    Writes nothing: the caller applies the Recheck once its Result reports it, so that a
    replacement never reaches the cache without a Result that says so. `values` are those this
    result uses.
    """
    cached = {n: v for n in names if (v := entry.value(n)) is not None}
    names = list(cached)
    if not _usable(first, names):
        return Recheck(
            CONTENDED,
            cached,
            detail={"names": names},
            note="the re-measurement was disturbed or failed: the cached baselines stand",
        )
    assert first is not None
    times1, how1 = first
    ratio = {n: times1[f"{n}_ms"] / cached[n] for n in names}
    tol1 = {n: tolerance(relative_spread(entry.conditions.get(n)), relative_spread(how1[n])) for n in names}
    detail: dict[str, Any] = {"ratio": ratio, "tolerance": tol1}
    disagree = [n for n in names if not agrees(cached[n], times1[f"{n}_ms"], tol1[n])]
    if not disagree:
        return Recheck(AGREED, cached, detail=detail)
    detail["disagreed"] = disagree
    second = again(disagree)
    if not _usable(second, disagree):
        return Recheck(
            CONTENDED,
            cached,
            detail=detail,
            note="the confirming re-measurement was disturbed or failed: the cached baselines stand",
        )
    assert second is not None
    times2, how2 = second
    confirmed: dict[str, float] = {}
    reasons: list[str] = []
    for n in disagree:
        a, b = times1[f"{n}_ms"], times2[f"{n}_ms"]
        tol2 = tolerance(relative_spread(how1[n]), relative_spread(how2[n]))
        if agrees(a, b, tol2):
            confirmed[n] = b
            reasons.append(
                f"{n}: re-measured {a:.4g} ms then {b:.4g} ms (agreeing within {tol2:.0%}); the cached "
                f"{cached[n]:.4g} ms is {apart(cached[n], a):.0%} apart (tolerance {tol1[n]:.0%})"
            )
    if not confirmed:
        return Recheck(
            UNCONFIRMED,
            cached,
            detail=detail,
            note="two re-measurements disagreed with each other: the cached baselines stand",
        )
    return Recheck(
        REPLACED,
        {**cached, **confirmed},
        replaced={n: cached[n] for n in confirmed},
        conditions={n: how2[n].model_dump() for n in confirmed},
        detail=detail,
        note="; ".join(reasons),
    )


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
