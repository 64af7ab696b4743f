"""fact sets: a section's facts stored once, shared by the runs holding them

Runs recorded before this revision keep every fact in ``facts``, which stays valid: a query
matches a run through its own facts or through its fact sets. Nothing is copied.

Revision ID: 3f2a9c1d7b64
Revises: 61bc45721a88
Create Date: 2026-11-29 12:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "3f2a9c1d7b64"
down_revision: str | Sequence[str] | None = "61bc45721a88"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "fact_sets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fact_sets")),
        sa.UniqueConstraint("digest", name=op.f("uq_fact_sets_digest")),
    )
    op.create_table(
        "fact_set_members",
        sa.Column("value_id", sa.Integer(), nullable=False),
        sa.Column("set_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("value_id", "set_id", name=op.f("pk_fact_set_members")),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "run_fact_sets",
        sa.Column("set_id", sa.Integer(), nullable=False),
        sa.Column("run_pk", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("set_id", "run_pk", name=op.f("pk_run_fact_sets")),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    # Runs recorded since the upgrade have their set facts copied back into ``facts``, so
    # the older schema answers the same queries.
    op.execute(
        "INSERT INTO facts (value_id, run_pk) "
        "SELECT m.value_id, r.run_pk FROM run_fact_sets r "
        "JOIN fact_set_members m ON m.set_id = r.set_id "
        "ON CONFLICT DO NOTHING"
    )
    op.drop_table("run_fact_sets")
    op.drop_table("fact_set_members")
    op.drop_table("fact_sets")
