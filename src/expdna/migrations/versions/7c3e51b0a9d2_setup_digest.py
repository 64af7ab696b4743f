"""runs.setup (code, config, training and data with seeds pooled: expdna explain --same-setup)

Runs recorded before this revision have no setup digest (NULL); ``expdna db upgrade`` fills
it in from their manifests, as it fills family digests.

Revision ID: 7c3e51b0a9d2
Revises: 1a62fd6a754c
Create Date: 2026-12-01 22:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "7c3e51b0a9d2"
down_revision: str | Sequence[str] | None = "1a62fd6a754c"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE, not batch mode, as for runs.family: batch mode would copy ``runs``.


def upgrade() -> None:
    op.add_column("runs", sa.Column("setup", sa.String(length=64), nullable=True))
    op.create_index(op.f("ix_runs_setup"), "runs", ["setup"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_runs_setup"), table_name="runs")
    op.execute("ALTER TABLE runs DROP COLUMN setup")
