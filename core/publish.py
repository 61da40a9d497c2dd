"""Handing submission ids to the workers: one Celery message per id, by task name.

The row is committed before anything is sent. A failed send is logged and swallowed: the row
stays `queued` and the worker's reconciler enqueues it again, so the client still gets its 202
and the submission is never lost. The API and the workers' reconciler both send through here.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any, Protocol

from kombu import serialization
from kombu.utils import json as kombu_json
from prometheus_client import Counter

from core.queues import TASK_NAME

log = logging.getLogger("kjudge.api")

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


# Transport options that change where or how kombu's Redis transport stores a message; with any
# of them set the API publishes through kombu itself (CeleryEnqueuer).
_LAYOUT_OPTIONS = frozenset({"global_keyprefix", "priority_steps", "sep", "queue_order_strategy"})


class RedisEnqueuer:
    """Celery task messages pushed straight onto the queues' Redis lists.

    Through kombu a publish costs ~1 ms of API CPU here, a fifth of a POST: a new Redis client
    object per message, the retry wrapper, routing and signals. The message is the same: Celery
    builds it (`app.amqp.as_task_v2`), kombu serializes the body, and the envelope is the one
    kombu's Redis transport writes for a direct publish to a queue (base64 body, delivery info,
    a fresh delivery tag); tests/api/test_queue.py compares the two byte layouts and a real
    worker consumes these. Several ids go in one pipelined round trip.
    """

    def __init__(self, app: Any, url: str) -> None:
        import redis

        self.app = app
        self.redis = redis.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=2.0)

    @classmethod
    def applies(cls, url: str, transport_options: dict[str, Any]) -> bool:
        return url.startswith(("redis://", "rediss://")) and not (_LAYOUT_OPTIONS & set(transport_options))

    def message(self, submission_id: str, queue: str) -> str:
        # A task id of its own, as send_task makes it: the submission id travels in args, and a
        # re-enqueued submission is a new task (the worker's claim makes it run once).
        task = self.app.amqp.as_task_v2(
            str(uuid.uuid4()),
            TASK_NAME,
            args=[submission_id],
            reply_to=self.app.thread_oid,  # what send_task passes
            ignore_result=None,
            create_sent_event=self.app.conf.task_send_sent_event,
        )
        content_type, encoding, payload = serialization.dumps(task.body, serializer="json")
        properties = {
            **task.properties,
            "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": queue},
            "priority": 0,
            "body_encoding": "base64",
            "delivery_tag": str(uuid.uuid4()),
        }
        envelope = {
            "body": base64.b64encode(payload.encode() if isinstance(payload, str) else payload).decode(),
            "content-encoding": encoding,
            "content-type": content_type,
            "headers": task.headers,
            "properties": properties,
        }
        return kombu_json.dumps(envelope)

    def enqueue(self, jobs: Sequence[tuple[str, str]], *, front: bool = False) -> int:
        """`front`: the next message a worker takes (kombu pushes left and pops right), for
        jobs recovered from a dead worker: they waited their turn once already, and "runs again
        within a minute" must not mean "after the whole backlog"."""
        try:
            pipe = self.redis.pipeline(transaction=False)
            push = pipe.rpush if front else pipe.lpush
            for submission_id, queue in jobs:
                push(queue, self.message(submission_id, queue))
            pipe.execute()
        except Exception as exc:  # noqa: BLE001 - see module docstring
            ENQUEUE_FAILURES.inc(len(jobs))
            log.warning("enqueue failed for %d submissions (reconciler will retry): %s", len(jobs), exc)
            return 0
        return len(jobs)

    def ping(self) -> None:
        self.redis.ping()

    def warm(self) -> None:
        try:
            self.redis.ping()
        except Exception as exc:  # noqa: BLE001 - best effort; /readyz reports a down broker
            log.warning("could not connect to the broker now: %s", exc)


def make_enqueuer(settings: Any) -> Enqueuer:
    """RedisEnqueuer where the broker is a plain Redis, else Celery's own publish. The app is
    configured as the workers' is (core.celery_config), so both agree on broker, serializer and
    queue options."""
    from core.celery_config import make_app  # Celery itself only when the API starts

    app = make_app(settings)
    url = app.conf.broker_url or ""
    if RedisEnqueuer.applies(url, dict(app.conf.broker_transport_options or {})):
        return RedisEnqueuer(app, url)
    return CeleryEnqueuer(app)
