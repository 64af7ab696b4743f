"""Export: one Parquet row per run, ready for pandas or DuckDB.

Columns: the run's key fields (``generated_at``/``recorded_at`` as UTC timestamps), its DNA
and the seven section digests as strings, and one float64 column ``metric_<name>`` per
final metric any exported run reported (null where a run did not), and one string column per
manifest path asked for with ``columns`` (``config.config_values.exp.yaml.optimizer.lr``:
the run's fact at that path, as ``find --where`` matches it; several values, from a list,
as a JSON list of them, sorted). Runs stream from the
index in row groups, oldest first, so memory stays flat on a large history; the file is
written to a temporary name beside the target, synced and renamed, so a reader sees the
old file or the whole new one. pyarrow is imported here only.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, select, union_all

from expdna.errors import InvalidInputError, WriteError
from expdna.regular import check_output
from expdna.store.index.bulk import chunks
from expdna.store.index.engine import Index
from expdna.store.index.models import (
    SECTION_COLUMNS,
    Fact,
    FactPath,
    FactSetMember,
    FactValue,
    Metric,
    Run,
    RunFactSet,
)
from expdna.store.queries import Filter, filtered

if TYPE_CHECKING:
    import pyarrow as pa

#: Runs per Parquet row group (and per metrics lookup).
ROW_GROUP = 50_000
METRIC_PREFIX = "metric_"

#: Output column -> runs column, for the string columns.
_TEXT_COLUMNS: dict[str, Any] = {
    "run_id": Run.run_id,
    "dna": Run.dna,
    "commit": Run.commit,
    "algorithm": Run.algorithm,
    "gpu_model": Run.gpu_model,
    "driver": Run.driver_version,
    "cuda": Run.cuda_version,
    "nccl": Run.nccl_version,
    "python": Run.python_version,
    "state": Run.state,
    "schema_version": Run.schema_version,
    **{f"{name}_digest": column for name, column in SECTION_COLUMNS.items()},
}
_TIME_COLUMNS: dict[str, Any] = {"generated_at": Run.generated_at, "recorded_at": Run.recorded_at}


def _schema(metric_names: Sequence[str], paths: Sequence[str] = ()) -> pa.Schema:
    import pyarrow as pa

    stamp = pa.timestamp("us", tz="UTC")
    fields = [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("dna", pa.string(), nullable=False),
        pa.field("dna_version", pa.int32(), nullable=False),
        *(pa.field(name, stamp, nullable=False) for name in _TIME_COLUMNS),
    ]
    fields += [
        pa.field(name, pa.string()) for name in _TEXT_COLUMNS if name not in ("run_id", "dna")
    ]
    fields += [pa.field(METRIC_PREFIX + name, pa.float64()) for name in metric_names]
    fields += [pa.field(path, pa.string()) for path in paths]
    return pa.schema(fields, metadata={"expdna.export": "runs v1"})


def _metrics(conn: Connection, run_pks: Sequence[int]) -> dict[int, dict[str, float]]:
    found: dict[int, dict[str, float]] = {}
    for part in chunks(run_pks):
        rows = conn.execute(
            select(Metric.run_pk, Metric.name, Metric.value).where(Metric.run_pk.in_(part))
        )
        for run_pk, name, value in rows:
            found.setdefault(run_pk, {})[name] = value
    return found


def _facts(
    conn: Connection, run_pks: Sequence[int], paths: Sequence[str]
) -> dict[int, dict[str, list[str]]]:
    """Run pk -> path -> the fact values a run holds there (its own or through a fact set)."""
    found: dict[int, dict[str, list[str]]] = {}
    if not paths:
        return found
    rows = conn.execute(select(FactPath.id, FactPath.path).where(FactPath.path.in_(paths)))
    names = {int(path_id): str(path) for path_id, path in rows}
    if not names:
        return found
    values = select(FactValue.id).where(FactValue.path_id.in_(names))
    for part in chunks(run_pks):
        own = select(Fact.run_pk, Fact.value_id).where(
            Fact.value_id.in_(values), Fact.run_pk.in_(part)
        )
        shared = (
            select(RunFactSet.run_pk, FactSetMember.value_id)
            .join(FactSetMember, FactSetMember.set_id == RunFactSet.set_id)
            .where(FactSetMember.value_id.in_(values), RunFactSet.run_pk.in_(part))
        )
        held = union_all(own, shared).subquery()
        held_values = conn.execute(
            select(held.c.run_pk, FactValue.path_id, FactValue.value).join(
                FactValue, FactValue.id == held.c.value_id
            )
        )
        for run_pk, path_id, value in held_values:
            found.setdefault(run_pk, {}).setdefault(names[path_id], []).append(value)
    return found


def _cell(values: list[str] | None) -> str | None:
    if not values:
        return None
    return values[0] if len(values) == 1 else json.dumps(sorted(set(values)))


def _batch(
    conn: Connection,
    rows: Sequence[Any],
    schema: pa.Schema,
    metric_names: Sequence[str],
    paths: Sequence[str] = (),
) -> pa.RecordBatch:
    import pyarrow as pa

    metrics = _metrics(conn, [row.id for row in rows])
    facts = _facts(conn, [row.id for row in rows], paths)
    columns: dict[str, list[Any]] = {
        name: [getattr(row, name) for row in rows]
        for name in ("run_id", "dna", "dna_version", *_TIME_COLUMNS)
    }
    columns.update(
        {
            name: [getattr(row, name) for row in rows]
            for name in _TEXT_COLUMNS
            if name not in columns
        }
    )
    for name in metric_names:
        columns[METRIC_PREFIX + name] = [metrics.get(row.id, {}).get(name) for row in rows]
    for path in paths:
        columns[path] = [_cell(facts.get(row.id, {}).get(path)) for row in rows]
    return pa.RecordBatch.from_pydict(columns, schema=schema)


def _check_target(path: Path) -> None:
    if path.is_dir():
        raise InvalidInputError(f"{path}: is a directory; give a file name for the export")
    if not path.parent.is_dir():
        raise InvalidInputError(f"{path.parent}: no such directory")
    # os.replace onto a device node or FIFO would swap the node itself for the export
    check_output(path)


def export_parquet(
    index: Index,
    path: Path,
    *,
    filters: Sequence[Filter] = (),
    since: datetime | None = None,
    row_group: int = ROW_GROUP,
    columns: Sequence[str] = (),
) -> int:
    """Write the matching runs to ``path`` (atomically); returns how many rows it holds.

    ``columns``: manifest paths to add as string columns (see the module doc)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InvalidInputError(
            "export --parquet needs pyarrow, which is not installed: pip install 'expdna[parquet]'"
        ) from None

    _check_target(path)
    paths = list(dict.fromkeys(columns))
    for column in paths:
        if not column or any(part == "" for part in column.split(".")):
            raise InvalidInputError(f"--column {column!r}: expected a dotted manifest path")
        if column in _TEXT_COLUMNS or column in _TIME_COLUMNS or column == "dna_version":
            raise InvalidInputError(f"--column {column}: the export has that column already")
    selected = [
        Run.id,
        Run.dna_version,
        *(c.label(n) for n, c in _TEXT_COLUMNS.items()),
        *(c.label(n) for n, c in _TIME_COLUMNS.items()),
    ]
    try:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{path.name}-")
    except OSError as exc:
        raise WriteError(f"{path}: cannot write: {exc.strerror}") from None
    os.close(fd)
    count = 0
    try:
        with index.read() as conn:
            stmt = filtered(conn, select(*selected), filters=filters, since=since)
            ids = filtered(conn, select(Run.id), filters=filters, since=since)
            names: list[str] = (
                []
                if ids is None
                else [
                    str(n)
                    for n in conn.execute(
                        select(Metric.name)
                        .where(Metric.run_pk.in_(ids))
                        .distinct()
                        .order_by(Metric.name)
                    ).scalars()
                ]
            )
            schema = _schema(names, paths)
            with pq.ParquetWriter(temp, schema) as writer:
                if stmt is not None:
                    ordered = stmt.order_by(Run.generated_at, Run.run_id)
                    result = conn.execution_options(yield_per=row_group).execute(ordered)
                    for rows in result.partitions(row_group):
                        writer.write_batch(_batch(conn, rows, schema, names, paths))
                        count += len(rows)
        with open(temp, "rb+") as fh:
            os.fsync(fh.fileno())
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
