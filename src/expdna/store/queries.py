"""Read queries over the index: resolve a run, list runs by filters, twins.

Each answer is an index lookup or range scan: a run id through its unique index, a DNA
prefix as a range on ``ix_runs_dna``, a fact filter as ranges on the facts and fact set keys
(path id, value, run). Nothing here reads every run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Connection, Row, Select, and_, or_, select, union_all

from expdna.errors import InvalidInputError
from expdna.manifest.display import short
from expdna.manifest.runid import RUN_ID
from expdna.store.entities import RunRecord, RunSummary
from expdna.store.errors import (
    AmbiguousPrefixError,
    InvalidRunRefError,
    RunNotFoundError,
)
from expdna.store.index.models import (
    SECTION_COLUMNS,
    Blob,
    Fact,
    FactPath,
    FactSetMember,
    FactValue,
    Run,
    RunFactSet,
)
from expdna.store.where import match_texts, near_paths

if TYPE_CHECKING:
    from typing_extensions import Unpack

    AnySelect = Select[Unpack[tuple[Any, ...]]]
    AnyRow = Row[Unpack[tuple[Any, ...]]]

MIN_PREFIX = 6
_HEX = re.compile(r"[0-9a-fA-F]+")
_CANDIDATES = 10

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

#: Dotted manifest paths answered from ``runs`` columns rather than from facts.
COLUMN_PATHS: dict[str, Any] = {
    "run_id": Run.run_id,
    "dna.value": Run.dna,
    "schema_version": Run.schema_version,
    "status.state": Run.state,
    **{f"dna.sections.{name}": column for name, column in SECTION_COLUMNS.items()},
}


@dataclass(frozen=True)
class Filter:
    """Runs where any of ``paths`` holds ``value`` (the value as the user wrote it)."""

    paths: tuple[str, ...]
    value: str


def _summary(row: AnyRow) -> RunSummary:
    return RunSummary(**row._mapping)


def _record(row: AnyRow) -> RunRecord:
    values = row._mapping
    return RunRecord(
        **{column.key: values[column.key] for column in SUMMARY_COLUMNS},
        dna_version=values["dna_version"],
        schema_version=values["schema_version"],
        sections={name: values[column.key] for name, column in SECTION_COLUMNS.items()},
        manifest_digest=values["digest"],
    )


def _record_select() -> AnySelect:
    return select(
        *SUMMARY_COLUMNS,
        Run.dna_version,
        Run.schema_version,
        *SECTION_COLUMNS.values(),
        Blob.digest,
    ).join(Blob, Blob.id == Run.manifest_blob_id)


def _newest_first(stmt: AnySelect) -> AnySelect:
    return stmt.order_by(Run.generated_at.desc(), Run.run_id.desc())


def get_run(conn: Connection, run_id: str) -> RunRecord | None:
    row = conn.execute(_record_select().where(Run.run_id == run_id)).first()
    return None if row is None else _record(row)


def _prefix_range(prefix: str) -> ColumnElement[bool]:
    """``dna`` starts with ``prefix``, as a range the DNA index can scan (any collation)."""
    after = int(prefix, 16) + 1
    if after >= 16 ** len(prefix):
        return Run.dna >= prefix
    return and_(Run.dna >= prefix, Run.dna < format(after, f"0{len(prefix)}x"))


def check_prefix(prefix: str) -> str:
    """A DNA prefix, lowercased; :class:`InvalidRunRefError` unless 6 to 64 hex characters."""
    if _HEX.fullmatch(prefix) is None or len(prefix) > 64:
        raise InvalidRunRefError(f"not a DNA prefix: {prefix!r} (expected hex characters)")
    if len(prefix) < MIN_PREFIX:
        raise InvalidRunRefError(
            f"DNA prefix {prefix!r} is too short: give at least {MIN_PREFIX} hex characters"
        )
    return prefix.lower()


def resolve_dna(conn: Connection, prefix: str) -> str:
    """The one DNA starting with ``prefix``; ambiguous (exit 2) or not found (exit 1)."""
    prefix = check_prefix(prefix)
    rows = (
        conn.execute(
            select(Run.dna)
            .where(_prefix_range(prefix))
            .distinct()
            .order_by(Run.dna)
            .limit(_CANDIDATES + 1)
        )
        .scalars()
        .all()
    )
    if not rows:
        raise RunNotFoundError(f"no recorded run has a DNA starting with {prefix}")
    if len(rows) > 1:
        shown = [short(dna) for dna in rows[:_CANDIDATES]]
        if len(rows) > _CANDIDATES:
            shown.append("...")
        raise AmbiguousPrefixError(prefix, shown)
    return str(rows[0])


def resolve(conn: Connection, ref: str) -> RunRecord:
    """A run by id, or the newest run of the DNA a prefix names."""
    looks_like_run = RUN_ID.fullmatch(ref) is not None
    if looks_like_run:
        found = get_run(conn, ref)
        if found is not None:
            return found
    if _HEX.fullmatch(ref) is not None:
        if len(ref) < MIN_PREFIX:
            raise InvalidRunRefError(
                f"no run {ref!r}, and a DNA prefix needs at least {MIN_PREFIX} hex characters"
            )
        dna = resolve_dna(conn, ref)
        row = conn.execute(_newest_first(_record_select().where(Run.dna == dna)).limit(1)).first()
        assert row is not None
        return _record(row)
    if not looks_like_run:
        raise InvalidRunRefError(f"not a run id or DNA prefix: {ref!r}")
    raise RunNotFoundError(f"no recorded run {ref!r}")


def run_pk(conn: Connection, run_id: str) -> int:
    """The index key of a run by its exact id (exit 2 when malformed, 1 when unknown)."""
    if RUN_ID.fullmatch(run_id) is None:
        raise InvalidRunRefError(f"not a run id: {run_id!r}")
    found = conn.execute(select(Run.id).where(Run.run_id == run_id)).scalar()
    if found is None:
        raise RunNotFoundError(f"no recorded run {run_id!r}")
    return int(found)


def path_ids(conn: Connection, paths: Sequence[str]) -> list[int]:
    return list(conn.execute(select(FactPath.id).where(FactPath.path.in_(paths))).scalars())


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
    if dna is not None:
        stmt = stmt.where(Run.dna == dna)
    if family is not None:
        stmt = stmt.where(Run.family == family)
    if dna_prefix is not None:
        stmt = stmt.where(_prefix_range(check_prefix(dna_prefix)))
    if since is not None:
        stmt = stmt.where(Run.generated_at >= since)
    for condition in filters:
        columns = [COLUMN_PATHS[p] for p in condition.paths if p in COLUMN_PATHS]
        fact_paths = [p for p in condition.paths if p not in COLUMN_PATHS]
        ids = path_ids(conn, fact_paths) if fact_paths else []
        if not columns and not ids:
            return None
        texts = match_texts(condition.value)
        alternatives: list[ColumnElement[bool]] = [c.in_(texts) for c in columns]
        if ids:
            # The record pipeline's value form, loaded only by a query that filters on facts.
            from expdna.store.record.flatten import query_value

            value_ids = select(FactValue.id).where(
                FactValue.path_id.in_(ids),
                FactValue.value.in_(sorted({query_value(t) for t in texts})),
            )
            # A run holds a fact itself or through a fact set (expdna.store.record.factsets).
            sets = select(FactSetMember.set_id).where(FactSetMember.value_id.in_(value_ids))
            holders = union_all(
                select(Fact.run_pk).where(Fact.value_id.in_(value_ids)),
                select(RunFactSet.run_pk).where(RunFactSet.set_id.in_(sets)),
            )
            alternatives.append(Run.id.in_(holders))
        stmt = stmt.where(or_(*alternatives))
    return stmt


def select_runs(
    conn: Connection,
    *,
    dna: str | None = None,
    dna_prefix: str | None = None,
    filters: Sequence[Filter] = (),
    since: datetime | None = None,
    limit: int | None = None,
    family: str | None = None,
) -> list[RunSummary]:
    """Runs matching every condition, newest first."""
    stmt = filtered(
        conn,
        select(*SUMMARY_COLUMNS),
        dna=dna,
        dna_prefix=dna_prefix,
        filters=filters,
        since=since,
        family=family,
    )
    if stmt is None:
        return []
    stmt = _newest_first(stmt)
    if limit is not None:
        stmt = stmt.limit(limit)
    return [_summary(row) for row in conn.execute(stmt)]


def select_ids(
    conn: Connection, *, filters: Sequence[Filter] = (), limit: int | None = None
) -> list[tuple[str, str]]:
    """(run id, DNA) of the runs matching every filter, newest first: no summaries to build,
    for answers of thousands of runs."""
    stmt = filtered(conn, select(Run.run_id, Run.dna), filters=filters)
    if stmt is None:
        return []
    stmt = _newest_first(stmt)
    if limit is not None:
        stmt = stmt.limit(limit)
    return [(str(run_id), str(dna)) for run_id, dna in conn.execute(stmt)]


#: ``expdna find`` options -> the manifest paths each one matches (any of them).
NAMED_FILTERS: dict[str, tuple[str, ...]] = {
    "vbios": ("hardware.gpus.vbios_version",),
    "driver": ("hardware.driver_version",),
    "gpu": ("hardware.gpu_model", "hardware.gpus.name"),
    "cuda": ("hardware.cuda_version",),
    "nccl": ("hardware.nccl_version",),
}


def named_filter(name: str, value: str) -> Filter:
    """``named_filter("vbios", "96.00.89.00.01")``: a filter from :data:`NAMED_FILTERS`."""
    return Filter(NAMED_FILTERS[name], value)


def unknown_paths(conn: Connection, filters: Sequence[Filter]) -> dict[str, list[str]]:
    """Each filter path that no recorded run has -> the nearest paths that some run has."""
    asked = {p for f in filters for p in f.paths if p not in COLUMN_PATHS}
    found = set(conn.execute(select(FactPath.path).where(FactPath.path.in_(asked))).scalars())
    missing = sorted(asked - found)
    if not missing:
        return {}
    known = [*COLUMN_PATHS, *conn.execute(select(FactPath.path)).scalars()]
    return {path: near_paths(path, known) for path in missing}


def parse_where(text: str) -> Filter:
    """``PATH=VALUE`` (split at the first ``=``) as a filter; bad syntax is exit 2."""
    path, sep, value = text.partition("=")
    path = path.strip()
    if not sep or not path or any(part == "" for part in path.split(".")):
        raise InvalidInputError(
            f"--where {text!r}: expected PATH=VALUE with a dotted manifest path, "
            "e.g. hardware.gpus.vbios_version=96.00.89.00.01"
        )
    return Filter((path,), value)
