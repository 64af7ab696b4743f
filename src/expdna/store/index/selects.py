"""The conditions of :mod:`expdna.store.queries` inside SQLAlchemy selects, for code that
builds its own statements over ``runs`` (the web view): the condition is the read
layer's SQL text, so a filter is written once whichever way it is run."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Select, text

from expdna.store.index.models import Run
from expdna.store.index.read import expand
from expdna.store.queries import Filter, conditions

if TYPE_CHECKING:
    from typing_extensions import Unpack

    AnySelect = Select[Unpack[tuple[Any, ...]]]

SUMMARY_COLUMNS = (
    Run.run_id,
    Run.dna,
    Run.generated_at,
    Run.recorded_at,
    Run.commit,
    Run.algorithm,
    Run.gpu_model,
    Run.driver_version,
    Run.cuda_version,
    Run.nccl_version,
    Run.python_version,
    Run.family,
    Run.unknown,
    Run.state,
)


def filtered(
    conn: Connection,
    stmt: AnySelect,
    *,
    dna: str | None = None,
    dna_prefix: str | None = None,
    filters: Sequence[Filter] = (),
    since: datetime | None = None,
    family: str | None = None,
) -> AnySelect | None:
    """``stmt`` (a select from ``runs``) limited to runs matching every condition; None
    when a filter names a path no run has (nothing can match)."""
    where = conditions(
        conn, dna=dna, dna_prefix=dna_prefix, filters=filters, since=since, family=family
    )
    if where is None:
        return None
    sql, params = expand(where.sql, where.params, conn.dialect.name)
    return stmt.where(text(sql).bindparams(**params))
