"""dashboard indexes: submissions by finished_at (evaluations per minute) and (status, queue)

Revision ID: 0003_dashboard_indexes
Revises: 0002_submission_profile
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0003_dashboard_indexes"
down_revision = "0002_submission_profile"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_submissions_finished", "submissions", ["finished_at"])
    op.create_index("ix_submissions_status_queue", "submissions", ["status", "queue"])


def downgrade() -> None:
    op.drop_index("ix_submissions_status_queue", table_name="submissions")
    op.drop_index("ix_submissions_finished", table_name="submissions")
