"""store_meta (the store id) and store_log (object-directory log entries applied)

An index upgraded to this revision has no store id and no applied log entries: the first
write through this expdna gives the store its id (in the object directory and here), and
the runs recorded before keep answering; ``expdna reindex`` adopts their manifests.

Revision ID: 1a62fd6a754c
Revises: 5d88e8697123
Create Date: 2026-12-01 16:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "1a62fd6a754c"
down_revision: str | Sequence[str] | None = "5d88e8697123"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "store_meta",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_store_meta")),
    )
    op.create_table(
        "store_log",
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_store_log")),
    )


def downgrade() -> None:
    op.drop_table("store_log")
    op.drop_table("store_meta")
