"""worker operations: the claim's holder process, and the workers registry's live state

Revision ID: 0004_worker_ops
Revises: 0003_dashboard_indexes
Create Date: 2026-12-02

- submissions.holder: which process holds the claim (pid namespace, pid, start time), so a
  worker restarted on the same host recognises a dead predecessor's claims at once instead of
  waiting for the lease (issue #15).
- workers: host, start time, current job, evaluations done, busy seconds, a drain request and
  free-form stats (compile-pool utilisation) — what `kjudge workers`, /v1/workers and the
  per-worker metrics show.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.types import JSONType, UTCDateTime

revision = "0004_worker_ops"
down_revision = "0003_dashboard_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("submissions", sa.Column("holder", sa.String(96), nullable=True))
    op.add_column("workers", sa.Column("host", sa.String(200), server_default="", nullable=False))
    op.add_column("workers", sa.Column("started_at", UTCDateTime(), nullable=True))
    op.add_column("workers", sa.Column("current_job", sa.String(36), nullable=True))
    op.add_column("workers", sa.Column("job_started_at", UTCDateTime(), nullable=True))
    op.add_column("workers", sa.Column("evaluations", sa.Integer(), server_default="0", nullable=False))
    op.add_column("workers", sa.Column("busy_s", sa.Float(), server_default="0", nullable=False))
    op.add_column("workers", sa.Column("drain", sa.Boolean(), server_default=sa.false(), nullable=False))
    op.add_column("workers", sa.Column("stats", JSONType, server_default="{}", nullable=False))


def downgrade() -> None:
    for column in (
        "stats",
        "drain",
        "busy_s",
        "evaluations",
        "job_started_at",
        "current_job",
        "started_at",
        "host",
    ):
        op.drop_column("workers", column)
    op.drop_column("submissions", "holder")
