"""Accepting submissions: validate, apply idempotency and reuse, store, commit, then enqueue.

One code path serves `POST /v1/submissions` (a batch of one) and `POST /v1/batches`, so both
have the same checks, the same idempotency rules and the same store-then-enqueue order.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from prometheus_client import Counter as MetricCounter
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session, sessionmaker

from api.auth import Principal
from api.backpressure import QueueGate
from api.errors import ApiError
from api.schemas import SubmissionAccepted, SubmissionCreate
from core.publish import Enqueuer
from core.queues import UnknownTarget, normalize_target, queue_for_target
from core.settings import Settings
from db.models import ApiKey, Batch, Problem, ResultRow, Submission, new_id
from db.session import write_lock
from db.types import utcnow
from evaluator.result import Language

LANGUAGES = tuple(lang.value for lang in Language)
MAX_METADATA_BYTES = 64 << 10

SUBMISSIONS_ACCEPTED = MetricCounter("kjudge_submissions_accepted_total", "submissions stored", ["kind"])


class ProblemCache:
    """Problem references already resolved. An id (the sha256 of the source) always names the
    same problem, so it is kept; a name may get a newer problem, so it is kept briefly."""

    NAME_TTL_S = 30.0

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._names: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def get(self, ref: str) -> str | None:
        with self._lock:
            if ref in self._ids:
                return ref
            hit = self._names.get(ref)
        return hit[1] if hit and hit[0] > time.monotonic() else None

    def put(self, ref: str, problem_id: str) -> None:
        with self._lock:
            if len(self._ids) + len(self._names) > 100_000:
                self._ids.clear()
                self._names.clear()
            if ref == problem_id:
                self._ids.add(ref)
            else:
                self._names[ref] = (time.monotonic() + self.NAME_TTL_S, problem_id)


@dataclass
class Prepared:
    """One validated submission, ready to store."""

    index: int
    problem_id: str
    language: str
    source: str
    source_sha256: str
    entry: str | None
    target: str
    queue: str
    metadata: dict[str, Any]
    reuse: bool
    idempotency_key: str | None
    profile: bool = False
    accepted: SubmissionAccepted | None = field(default=None)

    def same_request(self, row: Submission) -> bool:
        return (
            row.problem_id,
            row.source_sha256,
            row.language,
            row.target,
            row.entry,
            bool(row.profile),
        ) == (
            self.problem_id,
            self.source_sha256,
            self.language,
            self.target,
            self.entry,
            self.profile,
        )


def _where(batch: bool, index: int) -> str:
    return f"submissions[{index}]: " if batch else ""


def prepare(
    session: Session,
    settings: Settings,
    items: Sequence[SubmissionCreate],
    idempotency_keys: Sequence[str | None],
    *,
    batch: bool,
    cache: ProblemCache | None = None,
) -> list[Prepared]:
    """Checks every item before anything is stored; the first problem found is the answer."""
    problem_ids = _resolve_problems(session, {item.problem_id for item in items}, items, batch, cache)
    seen_keys: set[str] = set()
    out: list[Prepared] = []
    for i, (item, key) in enumerate(zip(items, idempotency_keys, strict=True)):
        where = _where(batch, i)
        if item.language not in LANGUAGES:
            raise ApiError(
                404,
                "unknown_language",
                f"{where}unknown language {item.language!r}: use one of {', '.join(LANGUAGES)}",
            )
        size = len(item.source.encode("utf-8"))
        if size > settings.max_source_bytes:
            raise ApiError(
                413,
                "source_too_large",
                f"{where}source is {size} bytes; the limit is {settings.max_source_bytes} bytes",
            )
        if not item.source.strip():
            raise ApiError(422, "empty_source", f"{where}source is empty")
        try:
            target = normalize_target(item.target)
            queue = queue_for_target(target)
        except UnknownTarget as exc:
            raise ApiError(422, "unknown_target", f"{where}{exc}") from None
        meta_bytes = len(json.dumps(item.metadata, default=str))
        if meta_bytes > MAX_METADATA_BYTES:
            raise ApiError(
                413,
                "metadata_too_large",
                f"{where}metadata is {meta_bytes} bytes; the limit is {MAX_METADATA_BYTES}",
            )
        if key is not None:
            if key in seen_keys:
                raise ApiError(
                    422, "duplicate_client_request_id", f"{where}client_request_id {key!r} appears twice"
                )
            seen_keys.add(key)
        out.append(
            Prepared(
                index=i,
                problem_id=problem_ids[item.problem_id],
                language=item.language,
                source=item.source,
                source_sha256=hashlib.sha256(item.source.encode("utf-8")).hexdigest(),
                entry=item.entry,
                target=target,
                queue=queue,
                metadata=json.loads(json.dumps(item.metadata, default=str)),
                reuse=item.reuse,
                idempotency_key=key,
                profile=item.profile,
            )
        )
    return out


def _resolve_problems(
    session: Session,
    refs: set[str],
    items: Sequence[SubmissionCreate],
    batch: bool,
    cache: ProblemCache | None,
) -> dict[str, str]:
    """Maps each reference (an id or a name; the newest problem of that name) to a problem id."""
    found: dict[str, str] = {}
    if cache is not None:
        for ref in refs:
            if (pid := cache.get(ref)) is not None:
                found[ref] = pid
    missing = refs - set(found)
    rows = []
    if missing:
        rows = session.execute(
            sa.select(Problem.id, Problem.name, Problem.created_at).where(
                sa.or_(Problem.id.in_(missing), Problem.name.in_(missing))
            )
        ).all()
    refs = missing
    newest: dict[str, tuple[Any, str]] = {}
    for pid, name, created in rows:
        if pid in refs:
            found[pid] = pid
        if name in refs and (name not in newest or created > newest[name][0]):
            newest[name] = (created, pid)
    for name, (_, pid) in newest.items():
        found.setdefault(name, pid)
    if cache is not None:
        for ref in missing:
            if ref in found:
                cache.put(ref, found[ref])
    for i, item in enumerate(items):
        if item.problem_id not in found:
            raise ApiError(
                404,
                "unknown_problem",
                f"{_where(batch, i)}unknown problem {item.problem_id!r}: GET /v1/problems lists them, "
                "POST /v1/problems adds one",
            )
    return found


def accept(
    session: Session,
    enqueuer: Enqueuer,
    principal: Principal,
    prepared: list[Prepared],
    *,
    batch: bool,
    gate: QueueGate | None = None,
) -> tuple[str | None, list[SubmissionAccepted]]:
    """Stores the new submissions in one transaction, commits, then enqueues them.

    Idempotency is optimistic: the first attempt just inserts (one round trip fewer on the
    common path). A key seen before, or a concurrent request with the same key, makes the
    insert fail on the unique index; the second attempt looks the keys up and answers with
    the stored submissions.
    """
    has_keys = any(p.idempotency_key is not None for p in prepared)
    for attempt in range(2):
        try:
            batch_id, jobs = _store(
                session, principal, prepared, batch=batch, check_keys=attempt == 1, gate=gate
            )
            break
        except sa_exc.IntegrityError:
            session.rollback()
            if attempt == 1 or not has_keys:
                raise
            for p in prepared:
                p.accepted = None
    if jobs:
        enqueuer.enqueue(jobs)
    return batch_id, [p.accepted for p in prepared if p.accepted is not None]


def submit(
    maker: sessionmaker[Session],
    settings: Settings,
    enqueuer: Enqueuer,
    problem_cache: ProblemCache,
    gate: QueueGate,
    principal: Principal,
    items: Sequence[SubmissionCreate],
    idempotency_keys: Sequence[str | None],
    *,
    batch: bool,
) -> tuple[str | None, list[SubmissionAccepted]]:
    """`prepare` then `accept` in a session of their own (blocking: the routes run it in the
    thread pool); the batch's id (None for a single submission) and the accepted submissions."""
    with maker() as session:
        prepared = prepare(session, settings, items, idempotency_keys, batch=batch, cache=problem_cache)
        return accept(session, enqueuer, principal, prepared, batch=batch, gate=gate)


# Core inserts, built once: the ORM's unit of work (and building the statement per request)
# costs more CPU than the insert itself.
_INSERT_BATCH = sa.insert(Batch.__table__)
_INSERT_SUBMISSIONS = sa.insert(Submission.__table__)
_INSERT_RESULTS = sa.insert(ResultRow.__table__)


def _store(
    session: Session,
    principal: Principal,
    prepared: list[Prepared],
    *,
    batch: bool,
    check_keys: bool,
    gate: QueueGate | None = None,
) -> tuple[str | None, list[tuple[str, str]]]:
    if check_keys:
        _apply_idempotency(session, principal, prepared, batch)
    fresh = [p for p in prepared if p.accepted is None]
    now = utcnow()
    batch_id: str | None = None
    if batch and fresh:
        batch_id = new_id()  # its row is inserted with the submissions' below
    elif batch:
        # Every item was a replay: answer with the batch they were first stored in, if one.
        batch_id = session.scalar(
            sa.select(Submission.batch_id).where(Submission.id == prepared[0].accepted.id)  # type: ignore[union-attr]
        )

    rows: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    jobs: list[tuple[str, str]] = []
    donors = _find_donors(session, [p for p in fresh if p.reuse])
    adding = Counter(p.queue for p in fresh if _reuse_key(p) not in donors)  # the ones enqueued below
    if gate is not None:
        # Backpressure: refused whole, before anything is inserted (api/backpressure.py).
        gate.admit(session, adding)
    for p in fresh:
        sid = new_id()
        meta = p.metadata
        row: dict[str, Any] = {
            "id": sid,
            "problem_id": p.problem_id,
            "language": p.language,
            "source": p.source,
            "source_sha256": p.source_sha256,
            "entry": p.entry,
            "target": p.target,
            "queue": p.queue,
            "metadata": meta,  # column name: rows go through a Core insert
            "model": _text(meta.get("model")),
            "run_id": _text(meta.get("run_id")),
            "idempotency_key": p.idempotency_key,
            "api_key_id": principal.key_id,
            "batch_id": batch_id,
            "batch_index": p.index if batch else None,
            "status": "queued",
            "verdict": None,
            "attempts": 0,
            "created_at": now,
            "updated_at": now,
            "reused_from": None,
            "profile": p.profile,
            # Every row has the same keys: one executemany of a batch mixing reused and new items.
            "started_at": None,
            "finished_at": None,
        }
        donor = donors.get(_reuse_key(p))
        if donor is not None:
            origin = donor.reused_from or donor.id
            row.update(
                status="done", verdict=donor.verdict, reused_from=origin, started_at=now, finished_at=now
            )
            copied = dict(donor.result)
            copied.update(id=sid, metadata=meta, reused_from=origin)
            results.append(
                {
                    "submission_id": sid,
                    "result": copied,
                    "speedup_vs_eager": donor.speedup_vs_eager,
                    "median_ms": donor.median_ms,
                    "created_at": now,
                }
            )
            p.accepted = SubmissionAccepted(
                id=sid, status="done", verdict=donor.verdict, reused_from=origin, result=copied
            )
        else:
            jobs.append((sid, p.queue))
            p.accepted = SubmissionAccepted(id=sid, status="queued")
        rows.append(row)

    # Every read is done (and everything built) before the first write: on SQLite the writes
    # and the commit hold the database's one write lock, and this process's writers queue on
    # write_lock() for it (db/session.py).
    with write_lock(session):
        try:
            if batch and fresh:
                session.execute(
                    _INSERT_BATCH,
                    {"id": batch_id, "api_key_id": principal.key_id, "count": len(fresh), "created_at": now},
                )
            if rows:
                session.execute(_INSERT_SUBMISSIONS, rows)
            if results:
                session.execute(_INSERT_RESULTS, results)
            if rows and principal.key_id is not None and principal.quota is not None:
                # Only keys with a quota touch their api_keys row: that row lock serializes every
                # commit of the key, which an unlimited key (an RL trainer) should not pay for.
                _charge_quota(session, principal.key_id, len(rows))
            session.commit()
        except BaseException:
            session.rollback()  # under the lock: SQLite's write lock goes with the transaction
            raise
    if gate is not None:
        gate.added(adding)
    if rows:
        SUBMISSIONS_ACCEPTED.labels("reused").inc(len(results))
        SUBMISSIONS_ACCEPTED.labels("queued").inc(len(jobs))
    return batch_id, jobs


def _apply_idempotency(session: Session, principal: Principal, prepared: list[Prepared], batch: bool) -> None:
    keyed = {p.idempotency_key: p for p in prepared if p.idempotency_key is not None}
    if not keyed:
        return
    scope = sa.func.coalesce(Submission.api_key_id, "") == (principal.key_id or "")
    existing = session.scalars(
        sa.select(Submission).where(scope, Submission.idempotency_key.in_(list(keyed)))
    ).all()
    for row in existing:
        p = keyed[row.idempotency_key]  # type: ignore[index]
        if not p.same_request(row):
            name = "client_request_id" if batch else "Idempotency-Key"
            raise ApiError(
                409,
                "idempotency_key_reused",
                f"{_where(batch, p.index)}{name} {p.idempotency_key!r} was already used for a different "
                f"submission ({row.id}); use a new key for a new submission",
            )
        p.accepted = SubmissionAccepted(
            id=row.id, status=row.status, verdict=row.verdict, reused_from=row.reused_from, replayed=True
        )


def _reuse_key(p: Prepared) -> tuple[str, str, str, str, str | None, bool]:
    return (p.problem_id, p.source_sha256, p.language, p.target, p.entry, p.profile)


@dataclass(frozen=True)
class Donor:
    """What reuse copies from an earlier finished submission."""

    id: str
    reused_from: str | None
    verdict: str | None
    result: dict[str, Any]
    speedup_vs_eager: float | None
    median_ms: float | None


def _donor_query(entry: bool, profile: bool) -> sa.Select[Any]:
    """The newest finished identical submission with a result; built once (building the
    expression cost as much CPU as running it), with or without an `entry`. A request for a
    profile reuses only a profiled result (one without would lack it)."""
    entry_match = Submission.entry == sa.bindparam("entry") if entry else Submission.entry.is_(None)
    return (
        sa.select(
            Submission.id,
            Submission.reused_from,
            Submission.verdict,
            ResultRow.result,
            ResultRow.speedup_vs_eager,
            ResultRow.median_ms,
        )
        .join(ResultRow, ResultRow.submission_id == Submission.id)
        .where(
            Submission.problem_id == sa.bindparam("problem_id"),
            Submission.source_sha256 == sa.bindparam("source_sha256"),
            Submission.language == sa.bindparam("language"),
            Submission.target == sa.bindparam("target"),
            entry_match,
            *([Submission.profile.is_(True)] if profile else []),
            Submission.status == "done",
        )
        .order_by(Submission.created_at.desc())
        .limit(1)
    )


_DONOR = {
    (entry, profile): _donor_query(entry, profile) for entry in (False, True) for profile in (False, True)
}


def _find_donors(
    session: Session, wanted: list[Prepared]
) -> dict[tuple[str, str, str, str, str | None, bool], Donor]:
    """For `reuse: true`: the newest finished identical submission that has a result. Only the
    columns reuse copies are read (no ORM objects, not the source): the reward path's hot query."""
    donors: dict[tuple[str, str, str, str, str | None, bool], Donor] = {}
    for p in wanted:
        key = _reuse_key(p)
        if key in donors:
            continue
        params = {
            "problem_id": p.problem_id,
            "source_sha256": p.source_sha256,
            "language": p.language,
            "target": p.target,
        }
        if p.entry is not None:
            params["entry"] = p.entry
        # On the session's connection: the ORM's execution path cost a third more CPU here.
        row = session.connection().execute(_DONOR[(p.entry is not None, p.profile)], params).first()
        if row is not None:
            donors[key] = Donor(*row)
    return donors


def _charge_quota(session: Session, key_id: str, n: int) -> None:
    # Last statement before commit: the key's row lock is held only for the commit itself.
    res = session.execute(
        sa.update(ApiKey)
        .where(ApiKey.id == key_id, sa.or_(ApiKey.quota.is_(None), ApiKey.used + n <= ApiKey.quota))
        .values(used=ApiKey.used + n)
    )
    if res.rowcount == 0:
        session.rollback()
        quota, used = session.execute(sa.select(ApiKey.quota, ApiKey.used).where(ApiKey.id == key_id)).one()
        raise ApiError(
            403,
            "quota_exceeded",
            f"this API key's quota is {quota} submissions and {used} are used; {n} more do not fit",
        )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)[:200]


def without_results(accepted: list[SubmissionAccepted]) -> list[SubmissionAccepted]:
    """The answer of a POST that did not ask for reused results (?include_result)."""
    for a in accepted:
        a.result = None
    return accepted
