"""initial schema: problems, api_keys, batches, submissions, results, baselines, workers

Revision ID: 0001_initial
Revises:
Create Date: 2025-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.types import JSONType, UTCDateTime

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "problems",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("level", sa.Integer(), nullable=True),
        sa.Column("tags", JSONType, nullable=False),
        sa.Column("settings", JSONType, nullable=False),
        sa.Column("roofline", JSONType, nullable=False),
        sa.Column("builtin", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_problems_name", "problems", ["name"])
    op.create_index("ix_problems_level", "problems", ["level"])

    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("scopes", JSONType, nullable=False),
        sa.Column("rate_limit_per_min", sa.Integer(), nullable=True),
        sa.Column("quota", sa.Integer(), nullable=True),
        sa.Column("used", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
    )

    op.create_table(
        "batches",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("api_key_id", sa.String(36), sa.ForeignKey("api_keys.id"), nullable=True),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_batches_api_key_id", "batches", ["api_key_id"])

    op.create_table(
        "submissions",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("problem_id", sa.String(64), sa.ForeignKey("problems.id"), nullable=False),
        sa.Column("language", sa.String(32), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("source_sha256", sa.String(64), nullable=False),
        sa.Column("entry", sa.String(200), nullable=True),
        sa.Column("target", sa.String(64), nullable=False),
        sa.Column("queue", sa.String(128), nullable=False),
        sa.Column("metadata", JSONType, nullable=False),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("run_id", sa.String(200), nullable=True),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("api_key_id", sa.String(36), sa.ForeignKey("api_keys.id"), nullable=True),
        sa.Column("batch_id", sa.String(36), sa.ForeignKey("batches.id"), nullable=True),
        sa.Column("batch_index", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("verdict", sa.String(32), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("worker", sa.String(200), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("lease_expires_at", UTCDateTime(), nullable=True),
        sa.Column("reused_from", sa.String(36), sa.ForeignKey("submissions.id"), nullable=True),
    )
    op.create_index("ix_submissions_verdict", "submissions", ["verdict"])
    op.create_index("ix_submissions_created_id", "submissions", ["created_at", "id"])
    op.create_index("ix_submissions_problem_created", "submissions", ["problem_id", "created_at"])
    op.create_index("ix_submissions_run_created", "submissions", ["run_id", "created_at"])
    op.create_index("ix_submissions_model_created", "submissions", ["model", "created_at"])
    op.create_index(
        "ix_submissions_reuse", "submissions", ["problem_id", "source_sha256", "language", "target"]
    )
    op.create_index("ix_submissions_status_updated", "submissions", ["status", "updated_at"])
    op.create_index("ix_submissions_batch", "submissions", ["batch_id", "batch_index"])
    op.create_index(
        "uq_submissions_idempotency",
        "submissions",
        [sa.text("coalesce(api_key_id, '')"), "idempotency_key"],
        unique=True,
    )

    op.create_table(
        "results",
        sa.Column(
            "submission_id",
            sa.String(36),
            sa.ForeignKey("submissions.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("result", JSONType, nullable=False),
        sa.Column("speedup_vs_eager", sa.Float(), nullable=True),
        sa.Column("median_ms", sa.Float(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_results_speedup", "results", ["speedup_vs_eager"])

    op.create_table(
        "baselines",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("problem_id", sa.String(64), sa.ForeignKey("problems.id"), nullable=False),
        sa.Column("device", sa.String(200), nullable=False),
        sa.Column("torch_version", sa.String(64), nullable=False),
        sa.Column("eager_ms", sa.Float(), nullable=True),
        sa.Column("compile_ms", sa.Float(), nullable=True),
        sa.Column("measured_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("problem_id", "device", "torch_version", name="uq_baselines_key"),
    )

    op.create_table(
        "workers",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("queue", sa.String(128), nullable=False),
        sa.Column("target", JSONType, nullable=False),
        sa.Column("last_seen", UTCDateTime(), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("workers")
    op.drop_table("baselines")
    op.drop_table("results")
    op.drop_table("submissions")
    op.drop_table("batches")
    op.drop_table("api_keys")
    op.drop_table("problems")
