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

from api.queue import CeleryEnqueuer
from api.settings import Settings, get_settings
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
        if app is None:
            from worker.celery_app import app
        # The API's producer: same task name, same fail-fast policy (the next pass is the retry).
        sent = CeleryEnqueuer(app).enqueue(report.requeued)
        log.info("reconciler: re-sent %d of %d submissions", sent, len(report.requeued))
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
        if app is None:
            from worker.celery_app import app
        sent = CeleryEnqueuer(app).enqueue(report.requeued)
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


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    report = run_once()
    print(f"re-sent {len(report.requeued)}, gave up on {len(report.gave_up)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
