"""SQLAlchemy 2 typed models: the one place the service's tables are defined.

PostgreSQL is the source of truth (DESIGN.md); Redis only carries submission ids. The API
writes `problems`, `submissions`, `batches` and `api_keys`; the worker writes status transitions
on `submissions`, the single `results` row per submission, `baselines` and `workers`.

Any change here needs a new Alembic revision under migrations/versions (a test compares the two).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from db.types import JSONType, UTCDateTime, utcnow

# Statuses after which a submission never changes again.
FINAL_STATUSES = ("done", "error")


def new_id() -> str:
    return str(uuid.uuid4())


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: JSONType, list[Any]: JSONType}


class Problem(Base):
    __tablename__ = "problems"

    # sha256 hex of the source: the same source always gets the same id (idempotent insert).
    id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(200), index=True)
    source: Mapped[str] = mapped_column(sa.Text)
    level: Mapped[int | None] = mapped_column(sa.Integer, index=True)
    tags: Mapped[list[Any]] = mapped_column(default=list)
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    roofline: Mapped[dict[str, Any]] = mapped_column(default=dict)
    builtin: Mapped[bool] = mapped_column(sa.Boolean, default=False, server_default=sa.false())
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(sa.String(200))
    # sha256 hex of the secret; the secret itself is shown once, at creation, and never stored.
    key_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    scopes: Mapped[list[Any]] = mapped_column(default=list)  # submit, read, problems:write, admin
    rate_limit_per_min: Mapped[int | None] = mapped_column(sa.Integer)
    quota: Mapped[int | None] = mapped_column(sa.Integer)  # submissions allowed in total; None: no cap
    # Submissions charged against `quota`. Counted only while the key has a quota: charging
    # locks the key's row until commit, which would serialize an unlimited key's requests.
    used: Mapped[int] = mapped_column(sa.Integer, default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column()


class Batch(Base):
    __tablename__ = "batches"

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    api_key_id: Mapped[str | None] = mapped_column(sa.ForeignKey("api_keys.id"), index=True)
    count: Mapped[int] = mapped_column(sa.Integer)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Submission(Base):
    __tablename__ = "submissions"
    __table_args__ = (
        # Listing: newest first with a (created_at, id) cursor, optionally per filter column.
        sa.Index("ix_submissions_created_id", "created_at", "id"),
        sa.Index("ix_submissions_problem_created", "problem_id", "created_at"),
        sa.Index("ix_submissions_run_created", "run_id", "created_at"),
        sa.Index("ix_submissions_model_created", "model", "created_at"),
        # `reuse: true` looks up an identical finished submission.
        sa.Index("ix_submissions_reuse", "problem_id", "source_sha256", "language", "target"),
        # The reconciler scans non-final rows by status and deadline.
        sa.Index("ix_submissions_status_updated", "status", "updated_at"),
        sa.Index("ix_submissions_batch", "batch_id", "batch_index"),
    )

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    problem_id: Mapped[str] = mapped_column(sa.ForeignKey("problems.id"))
    language: Mapped[str] = mapped_column(sa.String(32))
    source: Mapped[str] = mapped_column(sa.Text)
    source_sha256: Mapped[str] = mapped_column(sa.String(64))
    entry: Mapped[str | None] = mapped_column(sa.String(200))
    target: Mapped[str] = mapped_column(sa.String(64))  # requested: cpu|cuda|rocm|<arch>|any
    queue: Mapped[str] = mapped_column(sa.String(128))  # resolved Celery queue name
    # `metadata` is reserved on declarative classes; the column keeps the contract's name.
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
    model: Mapped[str | None] = mapped_column(sa.String(200))  # copied from metadata for filtering
    run_id: Mapped[str | None] = mapped_column(sa.String(200))  # copied from metadata for filtering
    idempotency_key: Mapped[str | None] = mapped_column(sa.String(200))
    api_key_id: Mapped[str | None] = mapped_column(sa.ForeignKey("api_keys.id"))
    batch_id: Mapped[str | None] = mapped_column(sa.ForeignKey("batches.id"))
    batch_index: Mapped[int | None] = mapped_column(sa.Integer)
    status: Mapped[str] = mapped_column(sa.String(16), default="queued")
    verdict: Mapped[str | None] = mapped_column(sa.String(32), index=True)
    message: Mapped[str | None] = mapped_column(sa.Text)  # why status is `error`, for the author
    attempts: Mapped[int] = mapped_column(sa.Integer, default=0, server_default="0")
    worker: Mapped[str | None] = mapped_column(sa.String(200))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column()
    finished_at: Mapped[datetime | None] = mapped_column()
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    lease_expires_at: Mapped[datetime | None] = mapped_column()
    reused_from: Mapped[str | None] = mapped_column(sa.ForeignKey("submissions.id"))
    # Profile mode: evaluate with EvalOptions(profile=True) (migration 0002_submission_profile).
    profile: Mapped[bool] = mapped_column(sa.Boolean, default=False, server_default=sa.false())

    result: Mapped[ResultRow | None] = relationship(back_populates="submission", uselist=False)


# Idempotency keys are unique per API key; coalesce() so that anonymous submissions (no key, the
# embedded default) share one scope instead of NULL key ids never colliding.
sa.Index(
    "uq_submissions_idempotency",
    sa.func.coalesce(Submission.api_key_id, ""),
    Submission.idempotency_key,
    unique=True,
)


class ResultRow(Base):
    """The evaluator's Result for one submission. Primary key = submission id, so a redelivered
    task can never store a second result (write with INSERT ... ON CONFLICT DO NOTHING)."""

    __tablename__ = "results"
    __table_args__ = (sa.Index("ix_results_speedup", "speedup_vs_eager"),)

    submission_id: Mapped[str] = mapped_column(
        sa.ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True
    )
    result: Mapped[dict[str, Any]] = mapped_column()  # evaluator.result.Result, JSON mode
    speedup_vs_eager: Mapped[float | None] = mapped_column(sa.Float)
    median_ms: Mapped[float | None] = mapped_column(sa.Float)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    submission: Mapped[Submission] = relationship(back_populates="result")


class BaselineRow(Base):
    __tablename__ = "baselines"
    __table_args__ = (sa.UniqueConstraint("problem_id", "device", "torch_version", name="uq_baselines_key"),)

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    problem_id: Mapped[str] = mapped_column(sa.ForeignKey("problems.id"))
    device: Mapped[str] = mapped_column(sa.String(200))
    torch_version: Mapped[str] = mapped_column(sa.String(64))
    eager_ms: Mapped[float | None] = mapped_column(sa.Float)
    compile_ms: Mapped[float | None] = mapped_column(sa.Float)
    measured_at: Mapped[datetime] = mapped_column(default=utcnow)


class WorkerRow(Base):
    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(sa.String(200), primary_key=True)  # hostname:gpu
    queue: Mapped[str] = mapped_column(sa.String(128))
    target: Mapped[dict[str, Any]] = mapped_column(default=dict)
    last_seen: Mapped[datetime] = mapped_column(default=utcnow)
    status: Mapped[str] = mapped_column(sa.String(32), default="idle")
