"""The tasks: `kjudge.evaluate(submission_id)` and, on a pipelined host, `kjudge.run`.

Flow: claim the row (fenced by its attempt number) → evaluate with the evaluator library while
a thread renews the lease → write the Result and `done` in one transaction. A duplicate or
redelivered message finds the row claimed or final and does nothing. kjudge's own failures
(the evaluator raised, the soft time limit hit) are retried with exponential backoff until
`max_attempts`, then the row is marked `error` with the message kept.

On a pipelined host (worker/pipeline.py) the worker's stage decides what `kjudge.evaluate` does:
the compile pool claims and builds (worker/compile_stage.py) and hands the job to a run stage of
its host with `kjudge.run(submission_id, token, handoff)`, which takes the row over under the
same token and evaluates with the build already cached.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from celery import Task
from celery.exceptions import Retry, SoftTimeLimitExceeded

from core.queues import RUN_TASK_NAME, TASK_NAME
from core.settings import get_settings
from db.session import session_scope
from evaluator.result import Language, Result, Status
from worker import holder, lifecycle, registry, store
from worker.celery_app import app
from worker.config import get_worker_settings
from worker.dbretry import with_db_retry
from worker.periodic import Periodic

if TYPE_CHECKING:
    from evaluator.options import EvalOptions, Submission
    from evaluator.problem import Problem

log = logging.getLogger(__name__)

SUPERSEDED = "superseded"  # another attempt owns the row: nothing was stored

# While the database is unreachable a message is retried this often before the reconciler's
# periodic re-send becomes the only path.
DB_RETRY_S = 5.0
DB_MAX_RETRIES = 60

lifecycle.connect()


class LeaseKeeper(Periodic):
    """Renews the claim's lease every lease/3 seconds while the evaluation runs, so the
    reconciler can tell a slow evaluation from a dead worker."""

    def __init__(self, claim: store.Claim, lease_s: float) -> None:
        interval = max(min(get_settings().lease_renew_s, lease_s / 3.0), 0.5)
        super().__init__(self._renew, interval, "kjudge-lease")
        self._claim = claim
        self._lease_s = lease_s
        self.lost = False  # set when the row was handed to another worker

    def _renew(self) -> bool:
        try:
            with session_scope() as session:
                if not store.renew_lease(
                    session, self._claim.submission_id, self._claim.token, self._lease_s
                ):
                    self.lost = True
                    return False
        except Exception as exc:  # database blip: try again next tick, the lease has slack
            log.warning("lease renewal for %s failed: %s", self._claim.submission_id, exc)
        return True


class PermanentFailure(Exception):
    """kjudge cannot evaluate this submission at all (e.g. a stored problem it cannot load)."""


@app.task(name=TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def evaluate_submission(self: Task, submission_id: str) -> str:
    settings = get_settings()
    wsettings = get_worker_settings()
    if wsettings.stage == "run":
        # A run stage consumes only run.* queues; an evaluate message here was misrouted by hand
        # (--queues). Claiming it would evaluate without the compile pool: leave it to the pool.
        log.warning(
            "run stage %s got %s on an eval queue; not claiming it", wsettings.worker_id, submission_id
        )
        return "misrouted"
    try:
        with session_scope() as session:
            claimed = store.claim(
                session,
                submission_id,
                worker_id=wsettings.worker_id,
                lease_s=settings.running_lease_s,
                max_attempts=settings.max_attempts,
                holder=holder.current(),
            )
    except sa.exc.DBAPIError as exc:
        # PostgreSQL unreachable: nothing was claimed. Try this message again shortly; should the
        # retry be lost too, the row is still `queued` and the reconciler re-sends it.
        log.warning("cannot claim %s now (database: %s); retrying", submission_id, _describe(exc))
        raise self.retry(countdown=DB_RETRY_S, max_retries=DB_MAX_RETRIES) from exc
    if isinstance(claimed, store.ClaimRefused):
        log.info("submission %s not evaluated: %s", submission_id, claimed.reason)
        return claimed.reason
    if wsettings.stage == "compile":
        from worker.compile_stage import compile_and_hand_off

        return _guarded(self, claimed, lambda: compile_and_hand_off(claimed), resend=False)
    return _evaluate_claimed(self, claimed, handoff=None)


@app.task(name=RUN_TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_submission(self: Task, submission_id: str, token: int, handoff: dict[str, Any]) -> str:
    """The run stage of a pipelined host: take over the row its compile pool built (same token),
    then evaluate; the build is in this host's cache."""
    settings = get_settings()
    wsettings = get_worker_settings()
    try:
        with session_scope() as session:
            claimed = store.take_over(
                session,
                submission_id,
                token,
                worker_id=wsettings.worker_id,
                lease_s=settings.running_lease_s,
                holder=holder.current(),
            )
    except sa.exc.DBAPIError as exc:
        # The compile slot keeps the lease alive meanwhile; should this retry be lost, the slot
        # gives up after handoff_timeout_s and the reconciler sends the job round again.
        log.warning("cannot take over %s now (database: %s); retrying", submission_id, _describe(exc))
        raise self.retry(countdown=DB_RETRY_S, max_retries=DB_MAX_RETRIES) from exc
    if claimed is None:
        log.info("submission %s attempt %d: no longer current, not run", submission_id, token)
        return "superseded"
    return _evaluate_claimed(self, claimed, handoff=handoff)


def _evaluate_claimed(self: Task, claimed: store.Claim, handoff: dict[str, Any] | None) -> str:
    def work() -> str:
        settings = get_settings()
        taken_at = time.time()
        with LeaseKeeper(claimed, settings.running_lease_s) as keeper:
            result = _evaluate(claimed, handed_off=handoff is not None)
        if handoff is not None:
            result = _with_stage_durations(result, handoff, taken_at)
        stored = with_db_retry(lambda: _finish(claimed, result), what=f"storing {claimed.submission_id}")
        if not stored:
            log.warning(
                "result for %s discarded: attempt %d no longer owns it%s",
                claimed.submission_id,
                claimed.token,
                " (lease lost)" if keeper.lost else "",
            )
            return SUPERSEDED
        return str(result.verdict)

    # A failed run goes round again through the compile pool (a fresh message on the
    # submission's queue); the serial worker retries its own message, as it always did.
    return _guarded(self, claimed, work, resend=handoff is not None)


def _with_stage_durations(result: Result, handoff: dict[str, Any], taken_at: float) -> Result:
    """The run found its build cached; the compile it reports is the compile pool's (its time,
    its steps and, where the run logged no compile, its log), and the wait for a free device
    (`gpu_wait`) and the run stage's own wall time (`gpu_stage`) are added."""
    durations = dict(result.durations_s)
    if "compile_s" in handoff:
        durations["compile"] = round(float(handoff["compile_s"]), 4)
    durations |= {str(k): round(float(v), 4) for k, v in handoff.get("compile_steps_s", {}).items()}
    if "handed_off_at" in handoff:
        durations["gpu_wait"] = round(max(taken_at - float(handoff["handed_off_at"]), 0.0), 4)
    durations["gpu_stage"] = round(time.time() - taken_at, 4)
    update: dict[str, Any] = {"durations_s": durations}
    if handoff.get("compile_log") and not result.logs.compile:
        # The build happened in the compile pool; the run found it cached and logged nothing.
        update["logs"] = result.logs.model_copy(update={"compile": str(handoff["compile_log"])})
    return result.model_copy(update=update)


def _guarded(self: Task, claimed: store.Claim, work: Callable[[], str], *, resend: bool) -> str:
    """Runs one stage of a claimed attempt; kjudge's own failures are retried with backoff (the
    row back to `queued` first), then `error` once out of attempts."""
    settings = get_settings()
    wsettings = get_worker_settings()
    submission_id = claimed.submission_id
    # The registry's current job is a device's; the compile pool's slots would only make it flap.
    track = wsettings.stage != "compile"
    if track:
        _job_started(wsettings.worker_id, submission_id)
    evaluated = False
    try:
        outcome = work()
        evaluated = outcome != SUPERSEDED
        return outcome
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

        def release() -> bool:
            with session_scope() as session:
                return store.release_for_retry(
                    session,
                    submission_id,
                    claimed.token,
                    message=f"retrying after kjudge's own failure: {message}",
                    retry_in_s=countdown,
                    grace_s=settings.queued_grace_s,
                )

        released = with_db_retry(release, what=f"releasing {submission_id}")
        if not released:
            return "superseded"
        if resend:
            app.send_task(TASK_NAME, args=[submission_id], queue=claimed.queue, countdown=countdown)
            return "retrying"
        raise self.retry(countdown=countdown, max_retries=None) from exc
    finally:
        if track:
            _job_finished(wsettings.worker_id, evaluated)


def load_claim(claimed: store.Claim) -> tuple[Problem, Submission]:
    """The evaluator's view of a claimed row."""
    from evaluator.options import Submission
    from evaluator.problem import Problem, ProblemError

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
    return problem, submission


def eval_options(device: str, profile: bool = False) -> EvalOptions:
    """The options every stage of this host evaluates with: one cache, so a build the compile
    pool made is the one the run stage looks up."""
    from evaluator.options import EvalOptions

    settings = get_settings()
    return EvalOptions(
        device=device,
        cache_dir=settings.home_dir / "cache",
        profile=profile,
        compile_baseline=settings.compile_baseline,
        baseline_recheck_every=settings.baseline_recheck_every,
    )


def _evaluate(claimed: store.Claim, handed_off: bool = False) -> Result:
    from evaluator.api import evaluate

    wsettings = get_worker_settings()
    problem, submission = load_claim(claimed)
    # A GPU worker may also serve CPU targets (the embedded worker takes every queue it can).
    device = "cpu" if claimed.queue.startswith("eval.cpu") else wsettings.eval_device
    options = eval_options(device, profile=claimed.profile)
    # A taken-over row is `running` already; its cached build must not flip it back to compiling.
    reported = (Status.RUNNING,) if handed_off else (Status.COMPILING, Status.RUNNING)

    def on_status(status: Status) -> None:
        if status not in reported:
            return

        def write() -> bool:
            with session_scope() as session:
                return store.set_status(session, claimed.submission_id, claimed.token, status)

        try:  # informational: a database blip must not abort the evaluation
            with_db_retry(write, what=f"status of {claimed.submission_id}", deadline_s=5.0)
        except Exception as exc:
            log.warning("could not record %s for %s: %s", status, claimed.submission_id, exc)

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


def _finish(claimed: store.Claim, result: Result) -> bool:
    with session_scope() as session:
        return store.finish(session, claimed, result)


def _job_started(worker_id: str, submission_id: str) -> None:
    try:
        with session_scope() as session:
            registry.job_started(session, worker_id, submission_id)
    except Exception as exc:  # the registry is informational; never fail an evaluation over it
        log.warning("could not mark worker %s busy: %s", worker_id, exc)


def _job_finished(worker_id: str, evaluated: bool) -> None:
    try:
        with session_scope() as session:
            registry.job_finished(session, worker_id, evaluated=evaluated)
    except Exception as exc:  # the registry is informational; never fail an evaluation over it
        log.warning("could not mark worker %s idle: %s", worker_id, exc)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SoftTimeLimitExceeded):
        return f"the evaluation exceeded the worker's soft time limit ({get_worker_settings().soft_time_limit_s} s)"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
