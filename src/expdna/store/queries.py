"""Read queries over the index: resolve a run, list runs by filters, twins.

Written once as SQL text on the read layer (:mod:`expdna.store.index.read`), so the same
statements answer on the standard library's sqlite3 and through SQLAlchemy on PostgreSQL.
Each answer is an index lookup or range scan: a run id through its unique index, a DNA
prefix as a range on ``ix_runs_dna``, a fact filter as ranges on the facts and fact set keys
(path id, value, run). Nothing here reads every run.

Every function takes a :class:`~expdna.store.index.read.Reader`, or a SQLAlchemy connection
that a write path holds (it is read through the same statements).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from expdna.errors import InvalidInputError
from expdna.manifest.display import short
from expdna.manifest.runid import RUN_ID
from expdna.store.entities import RunRecord, RunSummary
from expdna.store.errors import (
    AmbiguousPrefixError,
    InvalidRunRefError,
    RunNotFoundError,
)
from expdna.store.index.chunks import chunks
from expdna.store.index.read import Reader, Row, reader_of, when
from expdna.store.where import match_texts, near_paths

if TYPE_CHECKING:
    from sqlalchemy import Connection

    Conn = Reader | Connection

MIN_PREFIX = 6
_HEX = re.compile(r"[0-9a-fA-F]+")
_CANDIDATES = 10

#: The DNA sections, in the order of their ``runs`` digest columns (``<name>_digest``).
SECTIONS = ("code", "config", "training", "environment", "hardware", "runtime", "data")

#: :class:`RunSummary` fields, each a ``runs`` column of the same name.
SUMMARY_FIELDS = (
    "run_id",
    "dna",
    "generated_at",
    "recorded_at",
    "commit",
    "algorithm",
    "gpu_model",
    "driver_version",
    "cuda_version",
    "nccl_version",
    "python_version",
    "family",
    "unknown",
    "state",
)
_TIMES = frozenset({"generated_at", "recorded_at"})


def column(name: str) -> str:
    """``runs.<name>`` as SQL (``commit`` is a keyword: quoted)."""
    return f'runs."{name}"' if name == "commit" else f"runs.{name}"


SUMMARY_SQL = ", ".join(column(name) for name in SUMMARY_FIELDS)
_RECORD_SQL = (
    f"SELECT {SUMMARY_SQL}, runs.dna_version, runs.schema_version, "
    + ", ".join(f"runs.{name}_digest" for name in SECTIONS)
    + ", blobs.digest FROM runs JOIN blobs ON blobs.id = runs.manifest_blob_id"
)
NEWEST_FIRST = "ORDER BY runs.generated_at DESC, runs.run_id DESC"

#: Dotted manifest paths answered from ``runs`` columns rather than from facts.
COLUMN_PATHS: dict[str, str] = {
    "run_id": "run_id",
    "dna.value": "dna",
    "schema_version": "schema_version",
    "status.state": "state",
    **{f"dna.sections.{name}": f"{name}_digest" for name in SECTIONS},
}


@dataclass(frozen=True)
class Filter:
    """Runs where any of ``paths`` holds ``value`` (the value as the user wrote it)."""

    paths: tuple[str, ...]
    value: str


@dataclass(frozen=True)
class Where:
    """A condition on ``runs`` as SQL text and its parameters (``TRUE`` when empty)."""

    sql: str = "1 = 1"
    params: dict[str, Any] = field(default_factory=dict)


def summary(row: Row) -> RunSummary:
    """A :data:`SUMMARY_SQL` row as a summary."""
    values = dict(zip(SUMMARY_FIELDS, row, strict=False))
    for name in _TIMES:
        values[name] = when(values[name])
    return RunSummary(**values)


def _record(row: Row) -> RunRecord:
    base = len(SUMMARY_FIELDS)
    head = summary(row[:base])
    dna_version, schema_version = row[base], row[base + 1]
    digests = row[base + 2 : base + 2 + len(SECTIONS)]
    return RunRecord(
        **{name: getattr(head, name) for name in SUMMARY_FIELDS},
        dna_version=int(dna_version),
        schema_version=str(schema_version),
        sections=dict(zip(SECTIONS, digests, strict=True)),
        manifest_digest=str(row[-1]),
    )


def get_run(conn: Conn, run_id: str) -> RunRecord | None:
    row = reader_of(conn).first(f"{_RECORD_SQL} WHERE runs.run_id = :run_id", {"run_id": run_id})
    return None if row is None else _record(row)


def _prefix_range(prefix: str) -> Where:
    """``dna`` starts with ``prefix``, as a range the DNA index can scan (any collation)."""
    after = int(prefix, 16) + 1
    if after >= 16 ** len(prefix):
        return Where("runs.dna >= :prefix_low", {"prefix_low": prefix})
    high = format(after, f"0{len(prefix)}x")
    return Where(
        "runs.dna >= :prefix_low AND runs.dna < :prefix_high",
        {"prefix_low": prefix, "prefix_high": high},
    )


def check_prefix(prefix: str) -> str:
    """A DNA prefix, lowercased; :class:`InvalidRunRefError` unless 6 to 64 hex characters."""
    if _HEX.fullmatch(prefix) is None or len(prefix) > 64:
        raise InvalidRunRefError(f"not a DNA prefix: {prefix!r} (expected hex characters)")
    if len(prefix) < MIN_PREFIX:
        raise InvalidRunRefError(
            f"DNA prefix {prefix!r} is too short: give at least {MIN_PREFIX} hex characters"
        )
    return prefix.lower()


def resolve_dna(conn: Conn, prefix: str) -> str:
    """The one DNA starting with ``prefix``; ambiguous (exit 2) or not found (exit 1)."""
    prefix = check_prefix(prefix)
    where = _prefix_range(prefix)
    rows = reader_of(conn).column(
        f"SELECT DISTINCT runs.dna FROM runs WHERE {where.sql} ORDER BY runs.dna LIMIT :n",
        {**where.params, "n": _CANDIDATES + 1},
    )
    if not rows:
        raise RunNotFoundError(f"no recorded run has a DNA starting with {prefix}")
    if len(rows) > 1:
        shown = [short(dna) for dna in rows[:_CANDIDATES]]
        if len(rows) > _CANDIDATES:
            shown.append("...")
        raise AmbiguousPrefixError(prefix, shown)
    return str(rows[0])


def resolve(conn: Conn, ref: str) -> RunRecord:
    """A run by id, or the newest run of the DNA a prefix names."""
    reader = reader_of(conn)
    looks_like_run = RUN_ID.fullmatch(ref) is not None
    if looks_like_run:
        found = get_run(reader, ref)
        if found is not None:
            return found
    if _HEX.fullmatch(ref) is not None:
        if len(ref) < MIN_PREFIX:
            raise InvalidRunRefError(
                f"no run {ref!r}, and a DNA prefix needs at least {MIN_PREFIX} hex characters"
            )
        dna = resolve_dna(reader, ref)
        row = reader.first(
            f"{_RECORD_SQL} WHERE runs.dna = :dna {NEWEST_FIRST} LIMIT 1", {"dna": dna}
        )
        assert row is not None
        return _record(row)
    if not looks_like_run:
        raise InvalidRunRefError(f"not a run id or DNA prefix: {ref!r}")
    raise RunNotFoundError(f"no recorded run {ref!r}")


def run_pk(conn: Conn, run_id: str) -> int:
    """The index key of a run by its exact id (exit 2 when malformed, 1 when unknown)."""
    if RUN_ID.fullmatch(run_id) is None:
        raise InvalidRunRefError(f"not a run id: {run_id!r}")
    found = reader_of(conn).scalar("SELECT id FROM runs WHERE run_id = :run_id", {"run_id": run_id})
    if found is None:
        raise RunNotFoundError(f"no recorded run {run_id!r}")
    return int(found)


def manifest_digests(conn: Conn, run_ids: Iterable[str]) -> dict[str, str]:
    """run id -> manifest digest, for the given run ids that are recorded."""
    reader = reader_of(conn)
    found: dict[str, str] = {}
    for part in chunks(sorted(set(run_ids))):
        rows = reader.rows(
            "SELECT runs.run_id, blobs.digest FROM runs "
            "JOIN blobs ON blobs.id = runs.manifest_blob_id WHERE runs.run_id IN :part",
            {"part": part},
        )
        found.update({str(run_id): str(digest) for run_id, digest in rows})
    return found


def path_ids(conn: Conn, paths: Sequence[str]) -> list[int]:
    found = reader_of(conn).column(
        "SELECT id FROM fact_paths WHERE path IN :paths", {"paths": list(paths)}
    )
    return [int(path_id) for path_id in found]


def _holders(n: int) -> str:
    """Runs holding a value of filter ``n``: their own facts, or through a fact set
    (expdna.store.record.factsets)."""
    values = f"SELECT id FROM fact_values WHERE path_id IN :f{n}_paths AND value IN :f{n}_values"
    return (
        f"runs.id IN (SELECT run_pk FROM facts WHERE value_id IN ({values}) "
        "UNION ALL SELECT run_pk FROM run_fact_sets WHERE set_id IN "
        f"(SELECT set_id FROM fact_set_members WHERE value_id IN ({values})))"
    )


def conditions(
    conn: Conn,
    *,
    dna: str | None = None,
    dna_prefix: str | None = None,
    filters: Sequence[Filter] = (),
    since: datetime | None = None,
    family: str | None = None,
) -> Where | None:
    """Runs matching every condition, as a condition on ``runs``; None when a filter names
    a path no run has (nothing can match)."""
    parts: list[str] = []
    params: dict[str, Any] = {}
    if dna is not None:
        parts.append("runs.dna = :dna")
        params["dna"] = dna
    if family is not None:
        parts.append("runs.family = :family")
        params["family"] = family
    if dna_prefix is not None:
        prefix = _prefix_range(check_prefix(dna_prefix))
        parts.append(prefix.sql)
        params.update(prefix.params)
    if since is not None:
        parts.append("runs.generated_at >= :since")
        params["since"] = since
    for n, condition in enumerate(filters):
        columns = [COLUMN_PATHS[p] for p in condition.paths if p in COLUMN_PATHS]
        fact_paths = [p for p in condition.paths if p not in COLUMN_PATHS]
        ids = path_ids(conn, fact_paths) if fact_paths else []
        if not columns and not ids:
            return None
        texts = match_texts(condition.value)
        alternatives = [f"{column(name)} IN :f{n}_texts" for name in columns]
        if columns:
            params[f"f{n}_texts"] = texts
        if "status.state" in condition.paths:
            alternatives += _shown_state(condition.value.strip(), f"f{n}", params)
        if ids:
            # The record pipeline's value form, loaded only by a query that filters on facts.
            from expdna.store.record.flatten import query_value

            params[f"f{n}_paths"] = ids
            params[f"f{n}_values"] = sorted({query_value(t) for t in texts})
            alternatives.append(_holders(n))
        parts.append("(" + " OR ".join(alternatives) + ")")
    return Where(" AND ".join(parts), params) if parts else Where()


def _shown_state(value: str, key: str, params: dict[str, Any]) -> list[str]:
    """``status.state`` as listings show it: ``unknown`` (no status section) and
    ``unfinished`` (still ``running`` past the age limit) are in no manifest, yet a user who
    reads them in the STATE column selects on them."""
    if value == "unknown":
        return ["runs.state IS NULL"]
    if value == "unfinished":
        from expdna.manifest.status import unfinished_before

        before = unfinished_before(datetime.now(timezone.utc).replace(tzinfo=None))
        if before is None:
            return []
        params[f"{key}_before"] = before  # the index's naive UTC
        return [f"(runs.state = 'running' AND runs.generated_at < :{key}_before)"]
    return []


def select_runs(
    conn: Conn,
    *,
    dna: str | None = None,
    dna_prefix: str | None = None,
    filters: Sequence[Filter] = (),
    since: datetime | None = None,
    limit: int | None = None,
    family: str | None = None,
) -> list[RunSummary]:
    """Runs matching every condition, newest first."""
    reader = reader_of(conn)
    where = conditions(
        reader, dna=dna, dna_prefix=dna_prefix, filters=filters, since=since, family=family
    )
    if where is None:
        return []
    return [
        summary(row)
        for row in reader.rows(*_limited(f"SELECT {SUMMARY_SQL} FROM runs", where, limit))
    ]


def _limited(head: str, where: Where, limit: int | None) -> tuple[str, dict[str, Any]]:
    sql = f"{head} WHERE {where.sql} {NEWEST_FIRST}"
    if limit is None:
        return sql, where.params
    return f"{sql} LIMIT :limit", {**where.params, "limit": limit}


def select_ids(
    conn: Conn, *, filters: Sequence[Filter] = (), limit: int | None = None
) -> list[tuple[str, str]]:
    """(run id, DNA) of the runs matching every filter, newest first: no summaries to build,
    for answers of thousands of runs."""
    reader = reader_of(conn)
    where = conditions(reader, filters=filters)
    if where is None:
        return []
    rows = reader.rows(*_limited("SELECT runs.run_id, runs.dna FROM runs", where, limit))
    return [(str(run_id), str(dna)) for run_id, dna in rows]


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


def unknown_paths(conn: Conn, filters: Sequence[Filter]) -> dict[str, list[str]]:
    """Each filter path that no recorded run has -> the nearest paths that some run has."""
    reader = reader_of(conn)
    asked = sorted({p for f in filters for p in f.paths if p not in COLUMN_PATHS})
    found = set(reader.column("SELECT path FROM fact_paths WHERE path IN :asked", {"asked": asked}))
    missing = sorted(set(asked) - found)
    if not missing:
        return {}
    known = [*COLUMN_PATHS, *reader.column("SELECT path FROM fact_paths")]
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
