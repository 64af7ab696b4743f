"""runs.state (how a run ended: running, completed, failed, interrupted)

Runs recorded before this revision have no state (NULL), which reads as unknown: their
manifests have no ``status`` section. A ``status`` log entry updates the column later.

Revision ID: b7e4c2a91f30
Revises: 7c3e51b0a9d2
Create Date: 2026-12-01 21:55:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "b7e4c2a91f30"
down_revision: str | Sequence[str] | None = "7c3e51b0a9d2"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE, as in 5d88e8697123: batch mode would copy ``runs``.


def upgrade() -> None:
    op.add_column("runs", sa.Column("state", sa.String(length=16), nullable=True))
    op.create_index(op.f("ix_runs_state"), "runs", ["state"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_runs_state"), table_name="runs")
    op.execute("ALTER TABLE runs DROP COLUMN state")
