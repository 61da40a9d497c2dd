"""Stored speedups after a cached baseline was replaced (evaluator/baselines.py, re-checks).

An evaluation that finds its host's cached baseline for (problem, device, torch version) wrong
replaces it and says so in its Result (`baseline.remeasured`, `replaced_eager_ms`,
`replaced_compile_ms`). The results stored earlier against the old value carry speedups computed
from it — on the leaderboard (`results.speedup_vs_eager`) and in the stored Result.
`recompute_speedups` gives them the new baseline, in the transaction that stores the result that
replaced it (worker/store.py: finish), so nobody reads the new result beside stale old ones.
"""

from __future__ import annotations

import math
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from db.models import ResultRow, Submission

# A stored baseline "is" the replaced value when it is this close (it was copied from the same
# cache entry, so it is the same float; the margin only absorbs the JSON round trip).
SAME_VALUE = 1e-9
NAMES = ("eager", "compile")


def recompute_speedups(
    session: Session,
    *,
    problem_id: str,
    device: str,
    torch_version: str | None,
    replaced: dict[str, tuple[float, float]],
    revised_by: str,
) -> int:
    """Give the stored results that used a replaced baseline the new one; returns how many rows
    changed. Does not commit: the caller's transaction stores the replacing result too.

    `replaced` maps "eager" / "compile" to (old ms, new ms). A result is affected when it is of
    `problem_id`, its `target.device` is `device`, its baseline was cached under `torch_version`
    (results stored before `baseline.torch_version` existed match any), and its eager or compile
    baseline is the old value: the yardstick that was replaced. A result measured against
    another value — a contended fresh measurement, another host's cache — is left alone.

    In each affected Result: the baseline gets the new value, `replaced_<name>_ms` the old one
    and `revised_by` the replacing submission; `speedup.vs_<name>` is recomputed from
    `timing.median_ms` (the candidate's own time, unchanged), and `speedup_vs_eager` with it.
    The feedback text stays as it was given.
    """
    replaced = {name: pair for name, pair in replaced.items() if name in NAMES}
    if not replaced:
        return 0
    uses_old = [
        ResultRow.result[("baseline", f"{name}_ms")]
        .as_float()
        .between(old * (1 - SAME_VALUE), old * (1 + SAME_VALUE))
        for name, (old, _new) in replaced.items()
    ]
    rows = session.execute(
        sa.select(ResultRow.submission_id, ResultRow.result)
        .join(Submission, Submission.id == ResultRow.submission_id)
        .where(
            Submission.problem_id == problem_id,
            ResultRow.result[("target", "device")].as_string() == device,
            sa.or_(*uses_old),
            ResultRow.submission_id != revised_by,
        )
        .with_for_update(of=ResultRow)  # PostgreSQL: two replacements never interleave on a row
    ).all()
    updates = []
    for submission_id, body in rows:
        revised = _revised(dict(body), torch_version, replaced, revised_by)
        if revised is not None:
            speedup = revised.get("speedup") or {}
            updates.append(
                {
                    "submission_id": submission_id,
                    "result": revised,
                    "speedup_vs_eager": speedup.get("vs_eager"),
                }
            )
    if updates:
        session.execute(sa.update(ResultRow), updates)  # by primary key, one executemany
    return len(updates)


def _revised(
    body: dict[str, Any], torch_version: str | None, replaced: dict[str, tuple[float, float]], revised_by: str
) -> dict[str, Any] | None:
    """The stored Result (JSON) with the new baseline and speedups; None when not affected."""
    baseline = dict(body.get("baseline") or {})
    stored_version = baseline.get("torch_version")
    if torch_version is not None and stored_version is not None and stored_version != torch_version:
        return None
    changed: dict[str, float] = {}
    for name, (old, new) in replaced.items():
        value = baseline.get(f"{name}_ms")
        if isinstance(value, int | float) and math.isclose(value, old, rel_tol=SAME_VALUE):
            baseline[f"replaced_{name}_ms"] = value
            baseline[f"{name}_ms"] = changed[name] = new
    if not changed:
        return None
    baseline["revised_by"] = revised_by
    body["baseline"] = baseline
    median = (body.get("timing") or {}).get("median_ms")
    if body.get("speedup") is not None and isinstance(median, int | float) and median > 0:
        body["speedup"] = {**body["speedup"], **{f"vs_{name}": new / median for name, new in changed.items()}}
    return body
