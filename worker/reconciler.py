"""The reconciler: no lost broker message and no dead worker ever loses a submission.

PostgreSQL is the record and Redis only carries ids, so everything needed to recover is in the
`submissions` table: rows still `queued` past their deadline are sent again, and rows
`compiling`/`running` whose lease nobody renews (the worker died, or was killed -9) go back to
`queued` and are sent again — or become `error` once out of attempts. Duplicate messages are
harmless: the task's claim refuses every copy but one.

It runs as a background thread in every worker's main process (worker.lifecycle) and so also in
`kjudge serve`'s local worker; `python -m worker.reconciler` runs one pass by hand.
"""

from __future__ import annotations

import logging

from celery import Celery

from core.publish import CeleryEnqueuer, RedisEnqueuer
from core.settings import Settings, get_settings
from db.session import session_scope
from worker import store

log = logging.getLogger(__name__)


def run_once(
    app: Celery | None = None, settings: Settings | None = None, limit: int = 500
) -> store.ReconcileReport:
    """One pass: fix the rows in the database (committed), then send their messages."""
    settings = settings or get_settings()
    with session_scope(settings) as session:
        report = store.reconcile(
            session, queued_grace_s=settings.queued_grace_s, max_attempts=settings.max_attempts, limit=limit
        )
    if report.requeued:
        sent = _send(app, report)
        log.info("reconciler: re-sent %d of %d submissions", sent, len(report.requeued))
    lost = resend_lost(app, settings, limit=limit)
    report.requeued.extend(lost.requeued)
    if report.gave_up:
        log.warning(
            "reconciler: gave up on %d submissions: %s", len(report.gave_up), ", ".join(report.gave_up)
        )
    return report


def recover_orphans(
    host: str, app: Celery | None = None, settings: Settings | None = None
) -> store.ReconcileReport:
    """Requeues and re-sends the claims of this host's dead worker processes (worker.holder):
    a worker restarted after a crash runs its predecessor's job again at once, not after the lease."""
    from worker import holder

    settings = settings or get_settings()
    with session_scope(settings) as session:
        report = store.recover_orphans(
            session,
            host=host,
            is_dead=holder.is_dead,
            queued_grace_s=settings.queued_grace_s,
            max_attempts=settings.max_attempts,
        )
    if report.requeued:
        sent = _send(app, report)
        log.warning(
            "recovered %d claims of dead worker processes on %s (re-sent %d): %s",
            len(report.requeued),
            host,
            sent,
            ", ".join(sid for sid, _ in report.requeued),
        )
    if report.gave_up:
        log.warning("gave up on %d submissions: %s", len(report.gave_up), ", ".join(report.gave_up))
    return report


def resend_lost(app: Celery | None, settings: Settings, limit: int = 500) -> store.ReconcileReport:
    """Where the broker is a plain Redis: a queue whose list is empty while the database holds
    `queued` rows older than the grace has lost their messages (Redis restarted without its
    data); send them again now rather than at their next, age-doubled deadline."""
    report = store.ReconcileReport()
    if app is None:
        from worker.celery_app import app
    url = app.conf.broker_url or ""
    if not RedisEnqueuer.applies(url, dict(app.conf.broker_transport_options or {})):
        return report
    with session_scope(settings) as session:
        queues = store.queued_queues(session)
    if not queues:
        return report
    enqueuer = RedisEnqueuer(app, url)
    try:
        with enqueuer.redis.pipeline(transaction=False) as pipe:
            for queue in queues:
                pipe.llen(queue)
            lengths = pipe.execute()
        for queue, length in zip(queues, lengths, strict=True):
            if int(length):
                continue
            with session_scope(settings) as session:
                found = store.resend_lost_messages(
                    session, queue, queued_grace_s=settings.queued_grace_s, limit=limit
                )
            if found.requeued:
                sent = enqueuer.enqueue(found.requeued)
                log.warning("reconciler: queue %s was empty; re-sent %d queued submissions", queue, sent)
                report.requeued.extend(found.requeued)
    finally:
        enqueuer.redis.close()
    return report


def _send(app: Celery | None, report: store.ReconcileReport) -> int:
    """The API's producers (same task name, same fail-fast policy: the next pass is the retry).
    Jobs taken back from a dead worker go to the front of their queue where the broker is a
    plain Redis; the rest, and other brokers, to the back."""
    if app is None:
        from worker.celery_app import app
    front = [job for job in report.requeued if job[0] in report.recovered]
    back = [job for job in report.requeued if job[0] not in report.recovered]
    sent = 0
    url = app.conf.broker_url or ""
    if front and RedisEnqueuer.applies(url, dict(app.conf.broker_transport_options or {})):
        sent += RedisEnqueuer(app, url).enqueue(front, front=True)
    else:
        back = front + back
    if back:
        sent += CeleryEnqueuer(app).enqueue(back)
    return sent


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    report = run_once()
    print(f"re-sent {len(report.requeued)}, gave up on {len(report.gave_up)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
