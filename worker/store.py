"""Every database write the worker makes: claims, status transitions, the result, the registry.

Ownership of a submission is fenced by its `attempts` counter. A claim increments it and
returns the new value (the *token*); each later write of that evaluation is conditional on
`attempts = token`, so a worker that lost its lease (it was presumed dead and the submission
was handed to someone else) can never overwrite the new owner's work. The final write sets
`done` and inserts the single `results` row in one transaction, conditional on the row not
being final yet — with `results.submission_id` as primary key this makes a second result
impossible even for duplicated or redelivered messages. A result whose evaluation replaced a
cached baseline also revises, in that transaction, the earlier results measured against the
old value (db/speedups.py).

All timestamps are computed here in UTC and bound as parameters, so the same statements run
on PostgreSQL and SQLite.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from db.models import BaselineRow, Problem, ResultRow, Submission, WorkerRow
from db.speedups import recompute_speedups
from evaluator.result import Result, Status

ACTIVE = ("compiling", "running")
FINAL = ("done", "error")


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Claim:
    """What a worker needs to evaluate one submission, and its fencing token."""

    submission_id: str
    token: int
    problem_id: str
    problem_name: str
    problem_source: str
    language: str
    source: str
    entry: str | None
    queue: str
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    profile: bool = False  # profile mode: EvalOptions(profile=True)
    claimed_at: datetime | None = None


@dataclass(frozen=True)
class ClaimRefused:
    """Why a delivered message was not evaluated (all are normal for duplicates)."""

    reason: str  # missing | final | active | exhausted


def _claimable(now: datetime) -> sa.ColumnElement[bool]:
    # Queued, or in progress under a lease that nobody renewed (its worker died).
    return sa.or_(
        Submission.status == "queued",
        sa.and_(Submission.status.in_(ACTIVE), Submission.lease_expires_at < now),
    )


def claim(
    session: Session,
    submission_id: str,
    *,
    worker_id: str,
    lease_s: float,
    max_attempts: int,
    holder: str | None = None,
) -> Claim | ClaimRefused:
    """Atomically takes a submission for evaluation; commits.

    Exactly one of any number of concurrent deliveries of the same id gets a Claim. `holder`
    (worker.holder.current()) names the process, so its host can recover the claim if it dies.
    """
    now = utcnow()
    row = session.execute(
        sa.update(Submission)
        .where(Submission.id == submission_id, Submission.attempts < max_attempts, _claimable(now))
        .values(
            status="compiling",
            attempts=Submission.attempts + 1,
            worker=worker_id,
            holder=holder,
            started_at=now,
            lease_expires_at=now + timedelta(seconds=lease_s),
            message=None,
        )
        .returning(Submission.attempts)
    ).first()
    if row is None:
        refused = _refusal(session, submission_id, now=now, max_attempts=max_attempts)
        session.commit()
        return refused
    claim_ = _load_claim(session, submission_id, int(row[0]), claimed_at=now)
    session.commit()
    return claim_


def _load_claim(session: Session, submission_id: str, token: int, *, claimed_at: datetime | None) -> Claim:
    """The claim of a row its caller just took, read back with its problem; `claimed_at` None is
    the row's `started_at` (the compile stage's claim)."""
    sub, problem = session.execute(
        sa.select(Submission, Problem)
        .join(Problem, Problem.id == Submission.problem_id)
        .where(Submission.id == submission_id)
    ).one()
    return Claim(
        submission_id=sub.id,
        token=token,
        problem_id=problem.id,
        problem_name=problem.name,
        problem_source=problem.source,
        language=sub.language,
        source=sub.source,
        entry=sub.entry,
        queue=sub.queue,
        metadata=dict(sub.meta or {}),
        created_at=sub.created_at,
        claimed_at=sub.started_at if claimed_at is None else claimed_at,
        profile=bool(sub.profile),
    )


def _refusal(session: Session, submission_id: str, *, now: datetime, max_attempts: int) -> ClaimRefused:
    status = session.execute(sa.select(Submission.status).where(Submission.id == submission_id)).scalar()
    if status is None:
        return ClaimRefused("missing")
    if status in FINAL:
        return ClaimRefused("final")
    # Claimable but out of attempts: it failed (or killed its worker) too often. Give up loudly.
    gave_up = session.execute(
        sa.update(Submission)
        .where(Submission.id == submission_id, Submission.attempts >= max_attempts, _claimable(now))
        .values(
            status="error",
            finished_at=now,
            lease_expires_at=None,
            message=sa.func.coalesce(
                Submission.message,
                f"kjudge gave up after {max_attempts} attempts: the worker evaluating it was lost each time",
            ),
        )
    )
    return ClaimRefused("exhausted" if gave_up.rowcount else "active")


def _owned(submission_id: str, token: int) -> sa.ColumnElement[bool]:
    return sa.and_(Submission.id == submission_id, Submission.attempts == token)


def set_status(session: Session, submission_id: str, token: int, status: Status) -> bool:
    """compiling/running transitions reported by the evaluator; False if no longer the owner."""
    done = session.execute(
        sa.update(Submission)
        .where(_owned(submission_id, token), Submission.status.in_(ACTIVE))
        .values(status=str(status))
    )
    session.commit()
    return bool(done.rowcount)


def renew_lease(session: Session, submission_id: str, token: int, lease_s: float) -> bool:
    done = session.execute(
        sa.update(Submission)
        .where(_owned(submission_id, token), Submission.status.in_(ACTIVE))
        .values(lease_expires_at=utcnow() + timedelta(seconds=lease_s))
    )
    session.commit()
    return bool(done.rowcount)


def finish(session: Session, claim_: Claim, result: Result) -> bool:
    """Stores the Result and `done` in one transaction. False (and nothing written) when this
    evaluation no longer owns the submission or a result already exists."""
    now = utcnow()
    updated = session.execute(
        sa.update(Submission)
        .where(_owned(claim_.submission_id, claim_.token), Submission.status.notin_(FINAL))
        .values(
            status="done",
            verdict=str(result.verdict) if result.verdict is not None else None,
            message=result.message,
            finished_at=now,
            lease_expires_at=None,
        )
    )
    if not updated.rowcount:
        session.rollback()
        return False
    payload = result.model_dump(mode="json")
    speedup = result.speedup.vs_eager if result.speedup else None
    median = result.timing.median_ms if result.timing else None
    inserted = session.execute(
        _insert(session, ResultRow)
        .values(
            submission_id=claim_.submission_id,
            result=payload,
            speedup_vs_eager=speedup,
            median_ms=median,
            created_at=now,
        )
        .on_conflict_do_nothing(index_elements=["submission_id"])
    )
    if not inserted.rowcount:
        session.rollback()  # a result exists already: never a second one
        return False
    _record_baseline(session, claim_.problem_id, result, now)
    _recompute_after_replacement(session, claim_, result)
    session.commit()
    return True


def _recompute_after_replacement(session: Session, claim_: Claim, result: Result) -> None:
    """This evaluation replaced its host's cached baseline (a re-check: evaluator/baselines.py):
    the earlier results measured against the old value get the new one and their speedups
    recomputed, in this transaction (db/speedups.py)."""
    baseline = result.baseline
    if baseline is None or not baseline.remeasured or result.target is None:
        return
    replaced = {
        name: (old, new)
        for name, old, new in (
            ("eager", baseline.replaced_eager_ms, baseline.eager_ms),
            ("compile", baseline.replaced_compile_ms, baseline.compile_ms),
        )
        if old is not None and new is not None
    }
    recompute_speedups(
        session,
        problem_id=claim_.problem_id,
        device=result.target.device,
        torch_version=baseline.torch_version,
        replaced=replaced,
        revised_by=claim_.submission_id,
    )


def _record_baseline(session: Session, problem_id: str, result: Result, now: datetime) -> None:
    """Keeps the baselines table (leaderboards, problem pages) in step with what was measured."""
    if result.baseline is None or result.target is None or result.baseline.eager_ms is None:
        return
    torch_version = str((result.model_extra or {}).get("torch_version") or _torch_version())
    values = {
        "problem_id": problem_id,
        "device": result.target.device or f"{result.target.backend}:{result.target.arch}",
        "torch_version": torch_version,
        "eager_ms": result.baseline.eager_ms,
        "compile_ms": result.baseline.compile_ms,
        "measured_at": now,
    }
    stmt = _insert(session, BaselineRow).values(**values)
    session.execute(
        stmt.on_conflict_do_update(
            index_elements=["problem_id", "device", "torch_version"],
            set_={
                "eager_ms": stmt.excluded.eager_ms,
                "compile_ms": stmt.excluded.compile_ms,
                "measured_at": now,
            },
        )
    )


def _torch_version() -> str:
    import torch

    return str(torch.__version__)


def release_for_retry(
    session: Session, submission_id: str, token: int, *, message: str, retry_in_s: float, grace_s: float
) -> bool:
    """Back to `queued` after kjudge's own failure, so the retry (or the reconciler) can claim it."""
    done = session.execute(
        sa.update(Submission)
        .where(_owned(submission_id, token), Submission.status.in_(ACTIVE))
        .values(
            status="queued",
            worker=None,
            message=message,
            lease_expires_at=utcnow() + timedelta(seconds=retry_in_s + grace_s),
        )
    )
    session.commit()
    return bool(done.rowcount)


def fail(session: Session, submission_id: str, token: int, *, message: str) -> bool:
    """`error` after the last attempt; the message is kept for the author."""
    done = session.execute(
        sa.update(Submission)
        .where(_owned(submission_id, token), Submission.status.notin_(FINAL))
        .values(status="error", message=message, finished_at=utcnow(), lease_expires_at=None)
    )
    session.commit()
    return bool(done.rowcount)


# ---------------------------------------------------------------- the reconciler's statements


@dataclass
class ReconcileReport:
    requeued: list[tuple[str, str]] = field(default_factory=list)  # (submission id, queue)
    gave_up: list[str] = field(default_factory=list)
    # Of `requeued`, those taken back from a dead worker: sent to the front of their queue.
    recovered: set[str] = field(default_factory=set)


def reconcile(
    session: Session, *, queued_grace_s: float, max_attempts: int, limit: int = 500
) -> ReconcileReport:
    """Finds submissions whose message may be lost and prepares them to be sent again; commits.

    - `queued` rows past their deadline (created_at + grace, or the deadline a previous pass
      set). The next deadline doubles with the row's age, so a long but healthy backlog gets
      O(log age) duplicate messages, not one per pass (duplicates are refused by `claim`).
    - `compiling`/`running` rows whose lease expired (their worker died): back to `queued`, or
      `error` once out of attempts.
    Every change is a conditional update, so concurrent reconcilers never both requeue a row.
    The caller sends the messages after this commit (row first, then message, as the API does).
    """
    now = utcnow()
    report = ReconcileReport()
    stale_queued = session.execute(
        sa.select(Submission.id, Submission.queue, Submission.created_at, Submission.lease_expires_at)
        .where(Submission.status == "queued", _queued_overdue(now, queued_grace_s))
        .order_by(Submission.created_at)
        .limit(limit)
    ).all()
    for sub_id, queue, created_at, _lease in stale_queued:
        age_s = max((now - created_at).total_seconds(), 0.0)
        next_deadline = now + timedelta(seconds=max(queued_grace_s, age_s))
        bumped = session.execute(
            sa.update(Submission)
            .where(
                Submission.id == sub_id, Submission.status == "queued", _queued_overdue(now, queued_grace_s)
            )
            .values(lease_expires_at=next_deadline)
        )
        if bumped.rowcount:
            report.requeued.append((sub_id, queue))

    expired = session.execute(
        sa.select(Submission.id, Submission.queue, Submission.attempts, Submission.worker)
        .where(Submission.status.in_(ACTIVE), Submission.lease_expires_at < now)
        .order_by(Submission.lease_expires_at)
        .limit(limit)
    ).all()
    for sub_id, queue, attempts, worker in expired:
        still_expired = sa.and_(
            Submission.id == sub_id,
            Submission.attempts == attempts,
            Submission.status.in_(ACTIVE),
            Submission.lease_expires_at < now,
        )
        why = f"the worker evaluating it (last: {worker or 'unknown'}) stopped renewing its lease"
        _give_up_or_requeue(
            session, report, sub_id, queue, attempts, still_expired,
            now=now, max_attempts=max_attempts, queued_grace_s=queued_grace_s, why=why,
        )  # fmt: skip
    session.commit()
    return report


def _give_up_or_requeue(
    session: Session,
    report: ReconcileReport,
    sub_id: str,
    queue: str,
    attempts: int,
    same_claim: sa.ColumnElement[bool],
    *,
    now: datetime,
    max_attempts: int,
    queued_grace_s: float,
    why: str,
    clear_holder: bool = False,
) -> None:
    """A claim whose worker is gone (while `same_claim` still holds): `error` once it is out of
    attempts (`why` says what happened), else back to `queued`, to the front of its queue."""
    if attempts >= max_attempts:
        gave = session.execute(
            sa.update(Submission)
            .where(same_claim)
            .values(
                status="error",
                finished_at=now,
                lease_expires_at=None,
                message=f"kjudge gave up after {attempts} attempts: {why}",
            )
        )
        if gave.rowcount:
            report.gave_up.append(sub_id)
        return
    back = session.execute(
        sa.update(Submission)
        .where(same_claim)
        .values(
            status="queued",
            worker=None,
            lease_expires_at=now + timedelta(seconds=queued_grace_s),
            **({"holder": None} if clear_holder else {}),
        )
    )
    if back.rowcount:
        report.requeued.append((sub_id, queue))
        report.recovered.add(sub_id)


def queued_queues(session: Session) -> list[str]:
    """The queues that have `queued` submissions."""
    return list(
        session.execute(sa.select(Submission.queue).where(Submission.status == "queued").distinct()).scalars()
    )


def resend_lost_messages(
    session: Session, queue: str, *, queued_grace_s: float, limit: int = 500
) -> ReconcileReport:
    """`queued` rows of `queue` older than the grace whose message the caller knows is gone (the
    broker's list for the queue is empty: Redis restarted, or was flushed); commits.

    Without this they wait for their next deadline, which doubles with their age: after a
    broker restart an old backlog would sit idle for about as long as it is old.
    """
    now = utcnow()
    report = ReconcileReport()
    # Every worker's reconciler sees the same empty list: a row one of them re-sent in the last
    # half grace (its deadline set to now + grace) is left alone, so it is sent once, not N times.
    just_resent = sa.and_(
        Submission.lease_expires_at > now + timedelta(seconds=queued_grace_s / 2),
        Submission.lease_expires_at <= now + timedelta(seconds=queued_grace_s),
    )
    lost = sa.and_(
        Submission.queue == queue,
        Submission.status == "queued",
        Submission.created_at < now - timedelta(seconds=queued_grace_s),
        sa.or_(Submission.lease_expires_at.is_(None), sa.not_(just_resent)),
    )
    ids = session.execute(
        sa.select(Submission.id).where(lost).order_by(Submission.created_at).limit(limit)
    ).scalars()
    for sub_id in list(ids):
        bumped = session.execute(
            sa.update(Submission)
            .where(Submission.id == sub_id, lost)
            .values(lease_expires_at=now + timedelta(seconds=queued_grace_s))
        )
        if bumped.rowcount:
            report.requeued.append((sub_id, queue))
    session.commit()
    return report


def recover_orphans(
    session: Session,
    *,
    host: str,
    is_dead: Callable[[str | None], bool],
    queued_grace_s: float,
    max_attempts: int,
) -> ReconcileReport:
    """Requeues this host's claims whose holder process is certainly gone; commits.

    The lease would recover them too, but only after it runs out; a worker restarted on the same
    host knows at once (worker.holder). Each update is conditional on the row still being the
    same claim (attempts and holder unchanged), so a claim taken meanwhile is never touched.
    """
    now = utcnow()
    report = ReconcileReport()
    rows = session.execute(
        sa.select(Submission.id, Submission.queue, Submission.attempts, Submission.holder).where(
            Submission.status.in_(ACTIVE), Submission.worker.startswith(f"{host}:", autoescape=True)
        )
    ).all()
    for sub_id, queue, attempts, holder in rows:
        if not is_dead(holder):
            continue
        same_claim = sa.and_(
            Submission.id == sub_id,
            Submission.attempts == attempts,
            Submission.holder == holder,
            Submission.status.in_(ACTIVE),
        )
        _give_up_or_requeue(
            session, report, sub_id, queue, attempts, same_claim,
            now=now, max_attempts=max_attempts, queued_grace_s=queued_grace_s,
            why="the worker process evaluating it died each time", clear_holder=True,
        )  # fmt: skip
    session.commit()
    return report


def _queued_overdue(now: datetime, grace_s: float) -> sa.ColumnElement[bool]:
    return sa.or_(
        sa.and_(Submission.lease_expires_at.is_not(None), Submission.lease_expires_at < now),
        sa.and_(
            Submission.lease_expires_at.is_(None), Submission.created_at < now - timedelta(seconds=grace_s)
        ),
    )


# ---------------------------------------------------------------- the workers table


def heartbeat(
    session: Session, worker_id: str, *, queues: list[str], target: dict[str, Any], status: str | None = None
) -> None:
    """Upserts this worker's row; `status` None keeps the stored one (idle/busy set by the task)."""
    now = utcnow()
    queue = ",".join(queues)[:128]
    stmt = _insert(session, WorkerRow).values(
        id=worker_id, queue=queue, target=target, last_seen=now, status=status or "idle"
    )
    update: dict[str, Any] = {"last_seen": now, "queue": queue, "target": target}
    if status is not None:
        update["status"] = status
    session.execute(stmt.on_conflict_do_update(index_elements=["id"], set_=update))
    session.commit()


def set_worker_status(session: Session, worker_id: str, status: str) -> None:
    session.execute(
        sa.update(WorkerRow).where(WorkerRow.id == worker_id).values(status=status, last_seen=utcnow())
    )
    session.commit()


def _insert(session: Session, model: type[Any]) -> Any:
    """INSERT with ON CONFLICT support for the session's dialect."""
    name = session.get_bind().dialect.name
    if name == "postgresql":
        return postgresql.insert(model)
    if name == "sqlite":
        return sqlite.insert(model)
    raise RuntimeError(f"kjudge supports PostgreSQL and SQLite, not {name}")


# ---------------------------------------------------------------- the pipeline's hand-off
# A pipelined host splits one attempt in two stages (worker/pipeline.py): the compile stage claims
# the row (`claim` above: status `compiling`, token = attempts), builds, then hands the row to a GPU
# stage of the same host; the GPU stage takes it over (status `running`) under the same token. The
# token still fences every write, and `worker` tells the two holders of one attempt apart: the
# compile stage keeps renewing the lease only while the row is still `compiling` under its name.


@dataclass(frozen=True)
class HandOffState:
    """Where a handed-off row stands, as its compile stage sees it while waiting."""

    waiting: bool  # still `compiling` under the compile stage's name: keep the lease alive
    taken_over: bool  # a GPU stage owns it now (`running`, same token) or it is final


def renew_compile_lease(
    session: Session, submission_id: str, token: int, compile_worker: str, lease_s: float
) -> HandOffState:
    """The compile stage's lease renewal, also while its built row waits for a GPU stage.
    Stops renewing (waiting False) the moment a GPU stage took the row or the attempt was lost."""
    done = session.execute(
        sa.update(Submission)
        .where(
            _owned(submission_id, token),
            Submission.status == "compiling",
            Submission.worker == compile_worker,
        )
        .values(lease_expires_at=utcnow() + timedelta(seconds=lease_s))
    )
    session.commit()
    if done.rowcount:
        return HandOffState(waiting=True, taken_over=False)
    row = session.execute(
        sa.select(Submission.status, Submission.attempts).where(Submission.id == submission_id)
    ).first()
    taken = row is not None and int(row[1]) == token and row[0] in ("running", *FINAL)
    return HandOffState(waiting=False, taken_over=taken)


def take_over(
    session: Session,
    submission_id: str,
    token: int,
    *,
    worker_id: str,
    lease_s: float,
    holder: str | None = None,
) -> Claim | None:
    """The GPU stage's claim of a row its host's compile stage built; commits. None when the
    attempt is no longer current (the lease expired and the row went back to the queue, or it was
    finalized): the message is stale and nothing is evaluated."""
    now = utcnow()
    row = session.execute(
        sa.update(Submission)
        .where(_owned(submission_id, token), Submission.status == "compiling")
        .values(
            status="running",
            worker=worker_id,
            holder=holder,  # the run stage's process now holds the claim (orphan recovery)
            lease_expires_at=now + timedelta(seconds=lease_s),
        )
        .returning(Submission.attempts)
    ).first()
    if row is None:
        session.rollback()
        return None
    # claimed_at: the compile stage's claim (`queued` ends there)
    taken = _load_claim(session, submission_id, token, claimed_at=None)
    session.commit()
    return taken
