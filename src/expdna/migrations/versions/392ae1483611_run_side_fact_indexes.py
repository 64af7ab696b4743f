"""Run-side indexes on the fact tables (expdna explain reads one setup's facts in bulk)

The primary keys of ``run_fact_sets`` (set, run), ``fact_set_members`` (value, set) and
``facts`` (value, run) answer "which runs hold this value"; explain asks the other way
round, "which values do these runs hold", which without these indexes scans each table
whole. Each index is its table's key reversed, so a lookup is one covering range scan.

Revision ID: 392ae1483611
Revises: b7e4c2a91f30
Create Date: 2026-12-02 02:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

# revision identifiers, used by Alembic.
revision: str = "392ae1483611"
down_revision: str | Sequence[str] | None = "b7e4c2a91f30"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: (index, table, columns): each table's primary key reversed.
INDEXES = (
    ("ix_run_fact_sets_run_pk", "run_fact_sets", ["run_pk", "set_id"]),
    ("ix_fact_set_members_set_id", "fact_set_members", ["set_id", "value_id"]),
    ("ix_facts_run_pk", "facts", ["run_pk", "value_id"]),
)


def upgrade() -> None:
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns, unique=False)


def downgrade() -> None:
    for name, table, _ in reversed(INDEXES):
        op.drop_index(name, table_name=table)
