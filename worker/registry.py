"""The worker's writes to the `workers` table (db/workers.py is the read side and the drain
request, shared with the API and the CLI).

The main process writes at start, on each heartbeat and at shutdown; the pool process when a job
starts and ends. Every write is one or two statements; the registry is informational except for
`drain`, which the worker polls with its heartbeat.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from db.models import WorkerRow
from worker.store import _insert, utcnow

_stats_sources: list[Callable[[], dict[str, Any]]] = []


def add_stats_source(source: Callable[[], dict[str, Any]]) -> Callable[[], None]:
    """Hook for gauges a worker reports with each heartbeat (stored in `workers.stats`, shown
    by /v1/workers and /metrics). The compile pool reports `compile_pool_busy` and
    `compile_pool_slots` through this; /metrics turns every numeric entry into
    `kjudge_worker_stat{worker,name}` and the two compile-pool ones into
    `kjudge_compile_pool_utilisation{host}`. Returns a function that removes the source."""
    _stats_sources.append(source)
    return lambda: _stats_sources.remove(source)


def collect_stats() -> dict[str, Any]:
    stats: dict[str, Any] = {}
    for source in _stats_sources:
        try:
            stats.update(source())
        except Exception:  # noqa: BLE001 - a broken gauge must not stop the heartbeat
            continue
    return stats


def register(
    session: Session, worker_id: str, *, host: str, queues: list[str], target: dict[str, Any]
) -> None:
    """A new incarnation of this worker: counters restart, any old drain request is forgotten."""
    now = utcnow()
    queue = ",".join(queues)[:128]
    values: dict[str, Any] = {
        "queue": queue,
        "target": target,
        "last_seen": now,
        "status": "idle",
        "host": host,
        "started_at": now,
        "current_job": None,
        "job_started_at": None,
        "evaluations": 0,
        "busy_s": 0.0,
        "drain": False,
        "stats": {},
    }
    stmt = _insert(session, WorkerRow).values(id=worker_id, **values)
    session.execute(stmt.on_conflict_do_update(index_elements=["id"], set_=values))
    session.commit()


def beat(session: Session, worker_id: str, *, stats: dict[str, Any] | None = None) -> bool | None:
    """Heartbeat; returns whether a drain was requested, None when the worker has no row (its
    registration failed, e.g. the database was down at start: the caller registers)."""
    values: dict[str, Any] = {"last_seen": utcnow()}
    if stats is not None:
        values["stats"] = stats
    row = session.execute(
        sa.update(WorkerRow).where(WorkerRow.id == worker_id).values(**values).returning(WorkerRow.drain)
    ).first()
    session.commit()
    return None if row is None else bool(row[0])


def job_started(session: Session, worker_id: str, submission_id: str) -> None:
    now = utcnow()
    session.execute(
        sa.update(WorkerRow)
        .where(WorkerRow.id == worker_id)
        .values(
            current_job=submission_id,
            job_started_at=now,
            last_seen=now,
            status=sa.case((WorkerRow.drain, "draining"), else_="busy"),
        )
    )
    session.commit()


def job_finished(session: Session, worker_id: str, *, evaluated: bool) -> None:
    """Adds the job's wall time to busy_s; counts it when it produced a stored verdict."""
    now = utcnow()
    row = session.execute(sa.select(WorkerRow.job_started_at).where(WorkerRow.id == worker_id)).first()
    spent = max((now - row[0]).total_seconds(), 0.0) if row and row[0] is not None else 0.0
    session.execute(
        sa.update(WorkerRow)
        .where(WorkerRow.id == worker_id)
        .values(
            current_job=None,
            job_started_at=None,
            last_seen=now,
            busy_s=WorkerRow.busy_s + spent,
            evaluations=WorkerRow.evaluations + (1 if evaluated else 0),
            status=sa.case((WorkerRow.drain, "draining"), else_="idle"),
        )
    )
    session.commit()


def set_status(session: Session, worker_id: str, status: str) -> None:
    session.execute(
        sa.update(WorkerRow).where(WorkerRow.id == worker_id).values(status=status, last_seen=utcnow())
    )
    session.commit()
