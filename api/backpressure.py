"""Backpressure: refuse new work for a target whose queue is already deep, instead of letting
every caller's latency grow without bound.

A target's queue depth is the number of its submissions in status `queued` (stored, not yet
claimed by a worker: what a new submission would wait behind). `QueueGate.admit` is called by
`api.submitting` inside the request's transaction, before anything is inserted, with what the
request would add per queue (reused results add nothing); if any queue would pass
`Settings.max_queue_depth` the whole request — a whole batch — is refused with 429 and
`Retry-After`, and nothing is stored. The SDK (kjudge/client.py) waits Retry-After and sends the
same request again (idempotency keys make that safe).

Reading the depth is on the submit hot path, so it is cached per API process: one grouped count
of `queued` rows (index ix_submissions_status_updated) at most every `queue_depth_cache_s`, and
what this process accepted since is added locally, so a burst between two reads cannot overshoot
by more than other API processes' share of it. (`/metrics` reads `kjudge_queue_depth{queue}` from
the database for the whole cluster: api/cluster_metrics.py.)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

import sqlalchemy as sa
from prometheus_client import Counter
from sqlalchemy.orm import Session

from api.errors import ApiError
from core.settings import Settings
from db.models import Submission

REFUSED = Counter("kjudge_backpressure_refused_total", "requests refused because a queue was full", ["queue"])


class QueueGate:
    def __init__(self, settings: Settings) -> None:
        self.limit = settings.max_queue_depth
        self.ttl_s = settings.queue_depth_cache_s
        self.retry_after_s = settings.queue_retry_after_s
        self._depths: dict[str, int] = {}
        self._read_at = float("-inf")
        self._lock = threading.Lock()
        self._refreshing = False

    def depths(self, session: Session) -> dict[str, int]:
        """Queued submissions per queue, at most ttl_s old (plus this process's additions)."""
        now = time.monotonic()
        if now - self._read_at >= self.ttl_s:
            with self._lock:
                # One thread reads; the others go on with the previous figures meanwhile.
                mine = not self._refreshing and now - self._read_at >= self.ttl_s
                if mine:
                    self._refreshing = True
            if mine:
                try:
                    rows = session.execute(
                        sa.select(Submission.queue, sa.func.count())
                        .where(Submission.status == "queued")
                        .group_by(Submission.queue)
                    ).all()
                    fresh = {queue: int(n) for queue, n in rows}
                    with self._lock:
                        self._depths, self._read_at = fresh, time.monotonic()
                finally:
                    with self._lock:
                        self._refreshing = False
        with self._lock:
            return dict(self._depths)

    def admit(self, session: Session, adding: Mapping[str, int]) -> None:
        """Raises 429 when adding `adding` (queue -> count) would pass the limit on any queue."""
        if self.limit is None or not any(adding.values()):
            return
        depths = self.depths(session)
        for queue, n in adding.items():
            depth = depths.get(queue, 0)
            if n and depth + n > self.limit:
                REFUSED.labels(queue).inc()
                raise ApiError(
                    429,
                    "queue_full",
                    f"the {queue} queue holds {depth} submissions waiting (limit {self.limit}); this "
                    f"request would add {n}. Nothing was stored: retry in {self.retry_after_s} s",
                    headers={"Retry-After": str(self.retry_after_s)},
                    details={"queue": queue, "depth": depth, "limit": self.limit, "adding": n},
                )

    def added(self, adding: Mapping[str, int]) -> None:
        """What this process just enqueued counts until the next read replaces the figures."""
        with self._lock:
            for queue, n in adding.items():
                self._depths[queue] = self._depths.get(queue, 0) + n
