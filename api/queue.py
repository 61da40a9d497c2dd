"""Handing submission ids to the workers: one Celery message per id, by task name.

The row is committed before anything is sent. A failed send is logged and swallowed: the row
stays `queued` and the worker's reconciler enqueues it again, so the client still gets its 202
and the submission is never lost.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any, Protocol

from prometheus_client import Counter

log = logging.getLogger("kjudge.api")

TASK_NAME = "kjudge.evaluate"

ENQUEUE_FAILURES = Counter("kjudge_enqueue_failures_total", "submission ids the API failed to enqueue")


class Enqueuer(Protocol):
    def enqueue(self, jobs: Sequence[tuple[str, str]]) -> int:
        """Sends (submission_id, queue) pairs; returns how many were sent. Never raises."""
        ...

    def ping(self) -> None:
        """Raises when the broker cannot be reached."""
        ...


class CeleryEnqueuer:
    def __init__(self, app: Any) -> None:
        self.app = app

    def enqueue(self, jobs: Sequence[tuple[str, str]]) -> int:
        sent = 0
        try:
            # One producer (one broker connection) for the whole batch, and for several ids one
            # pipelined write where the transport batches (kombu's Redis transport: 1,000 ids in
            # ~0.4 s instead of ~0.8 s); counted as sent once the batch is flushed.
            with self.app.producer_or_acquire() as producer:
                batch = producer.batch() if len(jobs) > 1 and hasattr(producer, "batch") else nullcontext()
                with batch:
                    for submission_id, queue in jobs:
                        self.app.send_task(
                            TASK_NAME,
                            args=[submission_id],
                            queue=queue,
                            producer=producer,
                            # Fail fast: the reconciler is the retry path, not this request.
                            retry_policy={"max_retries": 1, "interval_start": 0, "interval_step": 0.2},
                        )
                sent = len(jobs)
        except Exception as exc:  # noqa: BLE001 - see module docstring
            ENQUEUE_FAILURES.inc(len(jobs) - sent)
            log.warning(
                "enqueue failed for %d of %d submissions (reconciler will retry): %s",
                len(jobs) - sent,
                len(jobs),
                exc,
            )
        return sent

    def ping(self) -> None:
        with self.app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)

    def warm(self) -> None:
        """Connects the producer pool's first producer (what the first enqueue would pay)."""
        try:
            with self.app.producer_or_acquire() as producer:
                producer.connection.ensure_connection(max_retries=1, timeout=2)
        except Exception as exc:  # noqa: BLE001 - best effort; /readyz reports a down broker
            log.warning("could not connect to the broker now: %s", exc)


def worker_celery_app(settings: Any = None) -> Any:
    """The worker's Celery app (worker/celery_app.py) configured from these settings, so that
    the API and the workers agree on broker, serializer and queue options."""
    from worker.celery_app import make_app

    return make_app(settings)
