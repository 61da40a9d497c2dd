"""The workers registry as operators see it: `kjudge workers`, `kjudge drain`, /v1/workers and
the per-worker metrics all read (and drain writes) through here. worker/registry.py holds the
worker's own writes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from db.models import WorkerRow

STATUSES = ("idle", "busy", "draining", "offline")


def _now() -> datetime:
    return datetime.now(UTC)


def request_drain(session: Session, worker_id: str) -> bool:
    """Asks a worker to finish its current job, take no more and exit; False if unknown/offline."""
    done = session.execute(
        sa.update(WorkerRow)
        .where(WorkerRow.id == worker_id, WorkerRow.status != "offline")
        .values(drain=True, status="draining")
    )
    session.commit()
    return bool(done.rowcount)


@dataclass(frozen=True)
class WorkerView:
    """One worker as operators see it (the CLI, /v1/workers, the metrics)."""

    id: str
    host: str
    gpu: str | None
    target: dict[str, Any]
    queues: list[str]
    status: str
    current_job: str | None
    job_age_s: float | None
    heartbeat_age_s: float
    evaluations: int
    busy_s: float
    uptime_s: float | None
    busy_ratio: float | None
    drain: bool
    stats: dict[str, Any]


def list_workers(session: Session, *, include_offline: bool = True) -> list[WorkerView]:
    now = _now()
    query = sa.select(WorkerRow).order_by(WorkerRow.id)
    if not include_offline:
        query = query.where(WorkerRow.status != "offline")
    views = []
    for w in session.scalars(query):
        uptime = _age(now, w.started_at)
        busy = float(w.busy_s or 0.0) + (_age(now, w.job_started_at) or 0.0)
        views.append(
            WorkerView(
                id=w.id,
                host=w.host or w.id.rsplit(":", 1)[0],
                gpu=(w.target or {}).get("gpu"),
                target={k: v for k, v in (w.target or {}).items() if k != "gpu"},
                queues=[q for q in (w.queue or "").split(",") if q],
                status=w.status,
                current_job=w.current_job,
                job_age_s=_age(now, w.job_started_at),
                heartbeat_age_s=_age(now, w.last_seen) or 0.0,
                evaluations=int(w.evaluations or 0),
                busy_s=round(busy, 3),
                uptime_s=uptime,
                busy_ratio=round(min(busy / uptime, 1.0), 4) if uptime else None,
                drain=bool(w.drain),
                stats=dict(w.stats or {}),
            )
        )
    return views


def _age(now: datetime, then: datetime | None) -> float | None:
    return round(max((now - then).total_seconds(), 0.0), 3) if then is not None else None


def as_dict(view: WorkerView) -> dict[str, Any]:
    return asdict(view)
