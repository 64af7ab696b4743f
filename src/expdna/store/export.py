"""Export: one Parquet row per run, ready for pandas or DuckDB.

Columns: the run's key fields (``generated_at``/``recorded_at`` as UTC timestamps), its DNA
and the seven section digests as strings, and one float64 column ``metric_<name>`` per
final metric any exported run reported (null where a run did not), and one string column per
manifest path asked for with ``columns`` (``config.config_values.exp.yaml.optimizer.lr``:
the run's fact at that path, as ``find --where`` matches it; several values, from a list,
as a JSON list of them, sorted). Runs stream from the
index in row groups, oldest first, so memory stays flat on a large history; the file is
written to a temporary name beside the target, synced and renamed, so a reader sees the
old file or the whole new one. The Parquet is written by :mod:`expdna.store.parquet`, in the
standard library: importing pyarrow would cost the command more than the rest of its start.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from expdna import __version__
from expdna.errors import InvalidInputError, WriteError
from expdna.regular import check_output
from expdna.store.index.chunks import chunks
from expdna.store.index.read import IndexReads, Reader, Row, when
from expdna.store.parquet import Column, ParquetWriter
from expdna.store.queries import SECTIONS, Filter, conditions
from expdna.store.queries import column as sql_column

#: Runs per Parquet row group (and per metrics lookup).
ROW_GROUP = 50_000
METRIC_PREFIX = "metric_"
_METADATA = {"expdna.export": "runs v1"}
_CREATED_BY = f"expdna version {__version__}"

#: Output column -> runs column, for the string columns.
_TEXT_COLUMNS: dict[str, str] = {
    "run_id": "run_id",
    "dna": "dna",
    "commit": "commit",
    "algorithm": "algorithm",
    "gpu_model": "gpu_model",
    "driver": "driver_version",
    "cuda": "cuda_version",
    "nccl": "nccl_version",
    "python": "python_version",
    "state": "state",
    "schema_version": "schema_version",
    **{f"{name}_digest": f"{name}_digest" for name in SECTIONS},
}
_TIME_COLUMNS: dict[str, str] = {"generated_at": "generated_at", "recorded_at": "recorded_at"}
#: The runs columns each exported row is read from, in this order.
_SELECTED = ("id", "dna_version", *_TEXT_COLUMNS, *_TIME_COLUMNS)
_SELECT_SQL = ", ".join(
    ["runs.id", "runs.dna_version"]
    + [sql_column(name) for name in _TEXT_COLUMNS.values()]
    + [sql_column(name) for name in _TIME_COLUMNS.values()]
)


def _schema(metric_names: Sequence[str], paths: Sequence[str] = ()) -> list[Column]:
    columns = [
        Column("run_id", "string", nullable=False),
        Column("dna", "string", nullable=False),
        Column("dna_version", "int32", nullable=False),
        *(Column(name, "timestamp", nullable=False) for name in _TIME_COLUMNS),
    ]
    columns += [Column(name, "string") for name in _TEXT_COLUMNS if name not in ("run_id", "dna")]
    columns += [Column(METRIC_PREFIX + name, "double") for name in metric_names]
    columns += [Column(path, "string") for path in paths]
    return columns


def _metrics(conn: Reader, run_pks: Sequence[int]) -> dict[int, dict[str, float]]:
    found: dict[int, dict[str, float]] = {}
    for part in chunks(run_pks):
        rows = conn.rows(
            "SELECT run_pk, name, value FROM metrics WHERE run_pk IN :part", {"part": part}
        )
        for run_pk, name, value in rows:
            found.setdefault(run_pk, {})[name] = value
    return found


def _facts(
    conn: Reader, run_pks: Sequence[int], paths: Sequence[str]
) -> dict[int, dict[str, list[str]]]:
    """Run pk -> path -> the fact values a run holds there (its own or through a fact set)."""
    found: dict[int, dict[str, list[str]]] = {}
    if not paths:
        return found
    rows = conn.rows("SELECT id, path FROM fact_paths WHERE path IN :paths", {"paths": list(paths)})
    names = {int(path_id): str(path) for path_id, path in rows}
    if not names:
        return found
    values = "SELECT id FROM fact_values WHERE path_id IN :path_ids"
    sql = (
        "SELECT held.run_pk, fact_values.path_id, fact_values.value FROM ("
        f"SELECT run_pk, value_id FROM facts WHERE value_id IN ({values}) AND run_pk IN :part "
        "UNION ALL SELECT run_fact_sets.run_pk, fact_set_members.value_id FROM run_fact_sets "
        "JOIN fact_set_members ON fact_set_members.set_id = run_fact_sets.set_id "
        f"WHERE fact_set_members.value_id IN ({values}) AND run_fact_sets.run_pk IN :part"
        ") AS held JOIN fact_values ON fact_values.id = held.value_id"
    )
    for part in chunks(run_pks):
        for run_pk, path_id, value in conn.rows(sql, {"path_ids": list(names), "part": part}):
            found.setdefault(run_pk, {}).setdefault(names[path_id], []).append(value)
    return found


def _cell(values: list[str] | None) -> str | None:
    if not values:
        return None
    return values[0] if len(values) == 1 else json.dumps(sorted(set(values)))


def _batch(
    conn: Reader, rows: Sequence[Row], metric_names: Sequence[str], paths: Sequence[str] = ()
) -> dict[str, list[Any]]:
    """The rows' columns, by name."""
    records = [dict(zip(_SELECTED, row, strict=True)) for row in rows]
    for record in records:
        for name in _TIME_COLUMNS:
            record[name] = when(record[name])
    keys = [record["id"] for record in records]
    metrics = _metrics(conn, keys)
    facts = _facts(conn, keys, paths)
    columns: dict[str, list[Any]] = {
        name: [record[name] for record in records]
        for name in ("run_id", "dna", "dna_version", *_TIME_COLUMNS)
    }
    columns.update(
        {
            name: [record[name] for record in records]
            for name in _TEXT_COLUMNS
            if name not in columns
        }
    )
    for name in metric_names:
        columns[METRIC_PREFIX + name] = [metrics.get(key, {}).get(name) for key in keys]
    for path in paths:
        columns[path] = [_cell(facts.get(key, {}).get(path)) for key in keys]
    return columns


def _check_target(path: Path) -> None:
    if path.is_dir():
        raise InvalidInputError(f"{path}: is a directory; give a file name for the export")
    if not path.parent.is_dir():
        raise InvalidInputError(f"{path.parent}: no such directory")
    # os.replace onto a device node or FIFO would swap the node itself for the export
    check_output(path)


def export_parquet(
    reads: IndexReads,
    path: Path,
    *,
    filters: Sequence[Filter] = (),
    since: datetime | None = None,
    row_group: int = ROW_GROUP,
    columns: Sequence[str] = (),
) -> int:
    """Write the matching runs to ``path`` (atomically); returns how many rows it holds.

    ``columns``: manifest paths to add as string columns (see the module doc)."""
    _check_target(path)
    paths = list(dict.fromkeys(columns))
    for column in paths:
        if not column or any(part == "" for part in column.split(".")):
            raise InvalidInputError(f"--column {column!r}: expected a dotted manifest path")
        if column in _TEXT_COLUMNS or column in _TIME_COLUMNS or column == "dna_version":
            raise InvalidInputError(f"--column {column}: the export has that column already")
    try:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{path.name}-")
    except OSError as exc:
        raise WriteError(f"{path}: cannot write: {exc.strerror}") from None
    count = 0
    try:
        with os.fdopen(fd, "wb") as out, reads.read() as conn:
            where = conditions(conn, filters=filters, since=since)
            names: list[str] = (
                []
                if where is None
                else [
                    str(n)
                    for n in conn.column(
                        "SELECT DISTINCT name FROM metrics WHERE run_pk IN "
                        f"(SELECT runs.id FROM runs WHERE {where.sql}) ORDER BY name",
                        where.params,
                    )
                ]
            )
            with ParquetWriter(
                out, _schema(names, paths), metadata=_METADATA, created_by=_CREATED_BY
            ) as writer:
                if where is not None:
                    ordered = (
                        f"SELECT {_SELECT_SQL} FROM runs WHERE {where.sql} "
                        "ORDER BY runs.generated_at, runs.run_id"
                    )
                    for rows in conn.batches(ordered, where.params, row_group):
                        writer.write_row_group(_batch(conn, rows, names, paths))
                        count += len(rows)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, 0o666 & ~_umask())
        os.replace(temp, path)
        _fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    return count


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_dir(directory: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
