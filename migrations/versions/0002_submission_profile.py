"""submissions.profile: the submission asked for a hardware profile (profile mode, issue #13)

Revision ID: 0002_submission_profile
Revises: 0001_initial
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_submission_profile"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # server_default: rows stored before this migration did not ask for a profile.
    op.add_column(
        "submissions", sa.Column("profile", sa.Boolean(), server_default=sa.false(), nullable=False)
    )


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:  # SQLite drops a column by copying the table
        batch.drop_column("profile")
