"""The one task: `kjudge.evaluate(submission_id)`.

Flow: claim the row (fenced by its attempt number) → evaluate with the evaluator library while
a thread renews the lease → write the Result and `done` in one transaction. A duplicate or
redelivered message finds the row claimed or final and does nothing. kjudge's own failures
(the evaluator raised, the soft time limit hit) are retried with exponential backoff until
`max_attempts`, then the row is marked `error` with the message kept.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import sqlalchemy as sa
from celery import Task
from celery.exceptions import Retry, SoftTimeLimitExceeded

from api.settings import get_settings
from db.session import session_scope
from evaluator.result import Language, Result, Status
from worker import lifecycle, store
from worker.celery_app import TASK_NAME, app
from worker.config import get_worker_settings

log = logging.getLogger(__name__)

# While the database is unreachable a message is retried this often before the reconciler's
# periodic re-send becomes the only path.
DB_RETRY_S = 5.0
DB_MAX_RETRIES = 60

lifecycle.connect()


class LeaseKeeper:
    """Renews the claim's lease every lease/3 seconds while the evaluation runs, so the
    reconciler can tell a slow evaluation from a dead worker."""

    def __init__(self, claim: store.Claim, lease_s: float) -> None:
        self._claim = claim
        self._lease_s = lease_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kjudge-lease", daemon=True)
        self.lost = False  # set when the row was handed to another worker

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        interval = max(self._lease_s / 3.0, 0.5)
        while not self._stop.wait(interval):
            try:
                with session_scope() as session:
                    if not store.renew_lease(
                        session, self._claim.submission_id, self._claim.token, self._lease_s
                    ):
                        self.lost = True
                        return
            except Exception as exc:  # database blip: try again next tick, the lease has slack
                log.warning("lease renewal for %s failed: %s", self._claim.submission_id, exc)


class PermanentFailure(Exception):
    """kjudge cannot evaluate this submission at all (e.g. a stored problem it cannot load)."""


@app.task(name=TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def evaluate_submission(self: Task, submission_id: str) -> str:
    settings = get_settings()
    wsettings = get_worker_settings()
    try:
        with session_scope() as session:
            claimed = store.claim(
                session,
                submission_id,
                worker_id=wsettings.worker_id,
                lease_s=settings.running_lease_s,
                max_attempts=settings.max_attempts,
            )
    except sa.exc.DBAPIError as exc:
        # PostgreSQL unreachable: nothing was claimed. Try this message again shortly; should the
        # retry be lost too, the row is still `queued` and the reconciler re-sends it.
        log.warning("cannot claim %s now (database: %s); retrying", submission_id, _describe(exc))
        raise self.retry(countdown=DB_RETRY_S, max_retries=DB_MAX_RETRIES) from exc
    if isinstance(claimed, store.ClaimRefused):
        log.info("submission %s not evaluated: %s", submission_id, claimed.reason)
        return claimed.reason

    _set_worker_status(wsettings.worker_id, "busy")
    try:
        with LeaseKeeper(claimed, settings.running_lease_s) as keeper:
            result = _evaluate(claimed)
        with session_scope() as session:
            stored = store.finish(session, claimed, result)
        if not stored:
            log.warning(
                "result for %s discarded: attempt %d no longer owns it%s",
                submission_id,
                claimed.token,
                " (lease lost)" if keeper.lost else "",
            )
            return "superseded"
        return str(result.verdict)
    except Retry:
        raise
    except PermanentFailure as exc:
        _fail(claimed, str(exc))
        return "error"
    except Exception as exc:  # kjudge's own failure (SoftTimeLimitExceeded included): retry
        message = _describe(exc)
        log.exception("kjudge failed evaluating %s (attempt %d)", submission_id, claimed.token)
        if claimed.token >= settings.max_attempts:
            _fail(claimed, f"kjudge failed {claimed.token} times evaluating this submission; last: {message}")
            return "error"
        countdown = wsettings.retry_backoff_s * 2 ** (claimed.token - 1)
        with session_scope() as session:
            released = store.release_for_retry(
                session,
                submission_id,
                claimed.token,
                message=f"retrying after kjudge's own failure: {message}",
                retry_in_s=countdown,
                grace_s=settings.queued_grace_s,
            )
        if not released:
            return "superseded"
        raise self.retry(countdown=countdown, max_retries=None) from exc
    finally:
        _set_worker_status(wsettings.worker_id, "idle")


def _evaluate(claimed: store.Claim) -> Result:
    from evaluator.api import evaluate
    from evaluator.options import EvalOptions, Submission
    from evaluator.problem import Problem, ProblemError

    settings = get_settings()
    wsettings = get_worker_settings()
    try:
        problem = Problem.from_source(claimed.problem_source, name=claimed.problem_name)
        submission = Submission(
            source=claimed.source,
            language=Language(claimed.language),
            entry=claimed.entry or "forward",
            metadata=claimed.metadata,
        )
    except (ProblemError, ValueError) as exc:
        # Validated at submission time, so this is kjudge's data, not the author's: no retry helps.
        raise PermanentFailure(f"kjudge cannot load this submission: {exc}") from exc
    # A GPU worker may also serve CPU targets (the embedded worker takes every queue it can).
    device = "cpu" if claimed.queue.startswith("eval.cpu") else wsettings.eval_device
    options = EvalOptions(device=device, cache_dir=settings.home_dir / "cache", profile=claimed.profile)

    def on_status(status: Status) -> None:
        if status in (Status.COMPILING, Status.RUNNING):
            with session_scope() as session:
                store.set_status(session, claimed.submission_id, claimed.token, status)

    result = evaluate(problem, submission, options, on_status=on_status)
    return _finalize(result, claimed)


def _finalize(result: Result, claimed: store.Claim) -> Result:
    """The stored Result speaks for the submission: its id, problem, metadata and queue time."""
    durations = dict(result.durations_s)
    if claimed.created_at is not None and claimed.claimed_at is not None:
        durations["queued"] = round(max((claimed.claimed_at - claimed.created_at).total_seconds(), 0.0), 3)
    metadata: dict[str, Any] = {**claimed.metadata, **result.metadata}
    return result.model_copy(
        update={
            "id": claimed.submission_id,
            "problem_id": claimed.problem_id,
            "status": Status.DONE,
            "durations_s": durations,
            "metadata": metadata,
        }
    )


def _fail(claimed: store.Claim, message: str) -> None:
    with session_scope() as session:
        store.fail(session, claimed.submission_id, claimed.token, message=message)


def _set_worker_status(worker_id: str, status: str) -> None:
    try:
        with session_scope() as session:
            store.set_worker_status(session, worker_id, status)
    except Exception as exc:  # the registry is informational; never fail an evaluation over it
        log.warning("could not mark worker %s %s: %s", worker_id, status, exc)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SoftTimeLimitExceeded):
        return f"the evaluation exceeded the worker's soft time limit ({get_worker_settings().soft_time_limit_s} s)"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
