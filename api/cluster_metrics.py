"""The cluster's metrics, read from PostgreSQL at scrape time (workers push through the database).

Workers write everything an operator needs into the database already — results with their
stage durations, the `workers` registry with current job, heartbeat, busy seconds and stats —
so the API's /metrics serves the whole cluster from there: one scrape target, nothing to
discover, and a worker behind NAT or in a network namespace is still visible. The cost is one
small query per family per scrape (the evaluations are read incrementally, never the whole table).

- `kjudge_queue_depth{queue}`: submissions `queued` per queue (waiting for a worker; the
  database's count, which is what users wait on — Redis may also hold duplicate messages).
- `kjudge_queue_consumers{queue}`: live workers consuming each queue (0 with a backlog: nothing
  will ever take it).
- `kjudge_broker_queue_length{queue}`: messages in each Redis list (Redis brokers only).
- `kjudge_evaluations_total{verdict,language,target}`: verdicts stored since this API process
  started (a counter: use rate()/increase()); `target` is backend:arch of the device that ran it.
- `kjudge_stage_seconds{stage}`: histograms of queue_wait, compile, gpu (the run child's wall
  time: the GPU stage) and timing, from the same results.
- per worker: `kjudge_worker_up`, `kjudge_worker_busy`, `kjudge_worker_heartbeat_age_seconds`,
  `kjudge_worker_busy_ratio` (busy seconds / uptime of this incarnation),
  `kjudge_worker_busy_seconds_total` (rate() of it is the recent busy ratio),
  `kjudge_worker_evaluations_total`, `kjudge_worker_current_job_seconds` and
  `kjudge_worker_current_job{worker,submission}` (1 while a job runs), `kjudge_worker_stat` (what
  the worker reports through worker.registry.add_stats_source), and
  `kjudge_compile_pool_utilisation{host}` from the compile pool's `compile_pool_busy` /
  `compile_pool_slots` stats.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector
from sqlalchemy.orm import Session, sessionmaker

from db.models import ResultRow, Submission
from db.workers import WorkerView, list_workers

log = logging.getLogger(__name__)

EVALUATIONS = Counter(
    "kjudge_evaluations", "verdicts stored", ["verdict", "language", "target"]
)  # exposed as kjudge_evaluations_total
STAGE_SECONDS = Histogram(
    "kjudge_stage_seconds",
    "seconds per evaluation stage: queue_wait, compile, gpu (the sandboxed run), timing",
    ["stage"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800),
)
SCRAPE_SECONDS = Gauge("kjudge_metrics_sample_seconds", "time the last scrape spent reading the database")
# durations_s key in a Result -> stage label
STAGES = {"queued": "queue_wait", "compile": "compile", "run": "gpu", "timing": "timing"}

# Rows are found by (status, updated_at), the reconciler's index; the final write sets both.
# A result committed late (its updated_at is older than rows already read) is still counted
# once if it lands within this window; ids seen in the window are remembered.
OVERLAP_S = 120.0
# A worker whose heartbeat is older than this counts as down (heartbeats come every 10 s).
WORKER_DOWN_AFTER_S = 60.0


class EvaluationFeed:
    """Adds the results stored since the last scrape to the counters and histograms."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since = datetime.now(UTC) - timedelta(seconds=OVERLAP_S)
        self._seen: dict[str, datetime] = {}

    def ingest(self, session: Session) -> int:
        with self._lock:
            rows = session.execute(
                sa.select(
                    Submission.id,
                    Submission.verdict,
                    Submission.language,
                    Submission.updated_at,
                    ResultRow.result,
                )
                .join(ResultRow, ResultRow.submission_id == Submission.id)
                .where(Submission.status == "done", Submission.updated_at >= self._since)
                .order_by(Submission.updated_at)
                .limit(20000)
            ).all()
            added = 0
            newest = self._since
            for sid, verdict, language, updated_at, result in rows:
                newest = max(newest, updated_at)
                if sid in self._seen:
                    continue
                self._seen[sid] = updated_at
                added += 1
                self._observe(verdict, language, result or {})
            self._since = max(self._since, newest - timedelta(seconds=OVERLAP_S))
            self._seen = {k: v for k, v in self._seen.items() if v >= self._since}
            return added

    @staticmethod
    def _observe(verdict: str | None, language: str, result: dict[str, Any]) -> None:
        target = result.get("target") or {}
        label = f"{target.get('backend', 'unknown')}:{target.get('arch', 'unknown')}"
        EVALUATIONS.labels(verdict or "none", language, label).inc()
        durations = result.get("durations_s") or {}
        for key, stage in STAGES.items():
            value = durations.get(key)
            if isinstance(value, int | float) and value >= 0:
                STAGE_SECONDS.labels(stage).observe(float(value))


class ClusterCollector(Collector):
    """Gauges sampled at scrape from the last `refresh` (called in the thread pool by /metrics)."""

    def __init__(self) -> None:
        self._queued: dict[str, int] = {}
        self._broker: dict[str, int] = {}
        self._workers: list[WorkerView] = []

    def refresh(self, maker: sessionmaker[Session], redis_url: str | None) -> None:
        with maker() as session:
            self._queued = dict(
                session.execute(
                    sa.select(Submission.queue, sa.func.count())
                    .where(Submission.status == "queued")
                    .group_by(Submission.queue)
                ).all()
            )
            self._workers = list_workers(session)
        queues = set(self._queued) | {q for w in self._workers for q in w.queues}
        self._broker = _broker_lengths(redis_url, sorted(queues)) if redis_url else {}

    def collect(self) -> Iterator[GaugeMetricFamily]:
        depth = GaugeMetricFamily("kjudge_queue_depth", "submissions queued, per queue", labels=["queue"])
        for queue in sorted(set(self._queued) | {q for w in self._workers for q in w.queues}):
            depth.add_metric([queue], self._queued.get(queue, 0))
        yield depth
        consumers = GaugeMetricFamily(
            "kjudge_queue_consumers", "live workers consuming each queue", labels=["queue"]
        )
        live = [w for w in self._workers if w.status != "offline" and w.heartbeat_age_s < WORKER_DOWN_AFTER_S]
        for queue in sorted(set(self._queued) | {q for w in self._workers for q in w.queues}):
            consumers.add_metric([queue], sum(1 for w in live if queue in w.queues))
        yield consumers
        if self._broker:
            broker = GaugeMetricFamily(
                "kjudge_broker_queue_length", "messages in the broker's list, per queue", labels=["queue"]
            )
            for queue, length in sorted(self._broker.items()):
                broker.add_metric([queue], length)
            yield broker
        yield from _worker_families(self._workers)


def _worker_families(workers: list[WorkerView]) -> Iterator[GaugeMetricFamily]:
    labels = ["worker", "host", "gpu", "target"]

    def family(name: str, doc: str) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, doc, labels=labels)

    up = family("kjudge_worker_up", "1 when the worker heartbeats and is not offline")
    busy = family("kjudge_worker_busy", "1 while the worker evaluates")
    age = family("kjudge_worker_heartbeat_age_seconds", "seconds since the worker's last heartbeat")
    ratio = family("kjudge_worker_busy_ratio", "busy seconds / uptime of this worker incarnation")
    busy_s = GaugeMetricFamily(
        "kjudge_worker_busy_seconds_total", "seconds spent evaluating since the worker started", labels=labels
    )
    evals = family("kjudge_worker_evaluations_total", "verdicts stored by this worker since it started")
    job_s = family("kjudge_worker_current_job_seconds", "age of the current job (0 when idle)")
    draining = family("kjudge_worker_draining", "1 when a drain was requested")
    job = GaugeMetricFamily(
        "kjudge_worker_current_job",
        "1 for the submission a worker evaluates now",
        labels=["worker", "submission"],
    )
    stat = GaugeMetricFamily(
        "kjudge_worker_stat", "numeric stats a worker reports (compile pool ...)", labels=["worker", "name"]
    )
    pool = GaugeMetricFamily(
        "kjudge_compile_pool_utilisation", "busy / slots of the host's compile pool", labels=["host"]
    )
    pool_seen: set[str] = set()
    for w in workers:
        values = [w.id, w.host, w.gpu or "", f"{w.target.get('backend', '')}:{w.target.get('arch', '')}"]
        alive = w.status != "offline" and w.heartbeat_age_s < WORKER_DOWN_AFTER_S
        up.add_metric(values, 1.0 if alive else 0.0)
        busy.add_metric(values, 1.0 if alive and w.current_job else 0.0)
        age.add_metric(values, w.heartbeat_age_s)
        ratio.add_metric(values, w.busy_ratio or 0.0)
        busy_s.add_metric(values, w.busy_s)
        evals.add_metric(values, w.evaluations)
        job_s.add_metric(values, w.job_age_s or 0.0)
        draining.add_metric(values, 1.0 if w.drain else 0.0)
        if w.current_job and alive:
            job.add_metric([w.id, w.current_job], 1.0)
        for name, value in sorted(w.stats.items()):
            if isinstance(value, int | float) and not isinstance(value, bool):
                stat.add_metric([w.id, name], float(value))
        slots = w.stats.get("compile_pool_slots")
        if alive and w.host not in pool_seen and isinstance(slots, int | float) and slots > 0:
            pool_seen.add(w.host)  # the pool is host-wide: every worker of the host reports the same
            pool.add_metric([w.host], float(w.stats.get("compile_pool_busy", 0)) / float(slots))
    yield from (up, busy, age, ratio, busy_s, evals, job_s, draining, job, stat, pool)


def _broker_lengths(redis_url: str, queues: list[str]) -> dict[str, int]:
    """LLEN of each queue's list (kombu's Redis transport: the list is named after the queue)."""
    import redis

    try:
        client = redis.Redis.from_url(redis_url, socket_timeout=1, socket_connect_timeout=1)
        with client.pipeline(transaction=False) as pipe:
            for queue in queues:
                pipe.llen(queue)
            return {q: int(n) for q, n in zip(queues, pipe.execute(), strict=True)}
    except Exception:  # noqa: BLE001 - a scrape must not fail because Redis is down
        return {}


_feed = EvaluationFeed()
_collector = ClusterCollector()
_registered = False
_register_lock = threading.Lock()


def sample(maker: sessionmaker[Session], broker_url: str | None) -> None:
    """Called by /metrics before it renders; never raises (a scrape reports what it can)."""
    global _registered
    with _register_lock:
        if not _registered:
            REGISTRY.register(_collector)
            _registered = True
    started = time.monotonic()
    try:
        with maker() as session:
            _feed.ingest(session)
        _collector.refresh(maker, broker_url if broker_url and broker_url.startswith("redis") else None)
    except Exception as exc:  # noqa: BLE001 - the database is down: the scrape serves what it has
        log.warning("cluster metrics not refreshed: %s", exc)
    SCRAPE_SECONDS.set(time.monotonic() - started)
