"""runs.family (the DNA without seeds) and runs.unknown (sections not collected)

Runs recorded before this revision have no family digest (NULL); ``expdna db upgrade`` fills
it in from their manifests. ``unknown`` is NULL for them, which is right: manifests before
schema 1.1 cannot mark a section unknown.

Revision ID: 5d88e8697123
Revises: 3f2a9c1d7b64
Create Date: 2026-12-01 14:55:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "5d88e8697123"
down_revision: str | Sequence[str] | None = "3f2a9c1d7b64"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE, not batch mode: SQLite adds and (since 3.35) drops a column in place,
# where batch mode would copy ``runs``, which the facts and pins tables reference.


def upgrade() -> None:
    op.add_column("runs", sa.Column("family", sa.String(length=64), nullable=True))
    op.add_column("runs", sa.Column("unknown", sa.Text(), nullable=True))
    op.create_index(op.f("ix_runs_family"), "runs", ["family"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_runs_family"), table_name="runs")
    op.execute("ALTER TABLE runs DROP COLUMN unknown")
    op.execute("ALTER TABLE runs DROP COLUMN family")
