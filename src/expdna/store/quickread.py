"""Read-only answers from a local SQLite index with the standard library alone.

A read-only query is a whole process: importing SQLAlchemy and the index models costs
several times what the query does (``benchmarks/cli_bench.py``). For a store whose index is
the local SQLite file at this expdna's revision, ``twins`` is answered here: the file opened
read-only (:mod:`expdna.store.index.readonly`), one fixed SQL statement, rows into the same
:class:`RunSummary`.

Only the plain case is answered: a run id that exists, or a DNA prefix that names exactly
one DNA. Anything else (a PostgreSQL index, another revision, an unknown run, an ambiguous
prefix, an unreadable file) returns None, and the caller asks the :class:`Store`, which
gives the one exact answer or error. Tests hold every answer equal to the store's.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from datetime import datetime
from pathlib import Path

from expdna.store.entities import RunSummary
from expdna.store.index.readonly import read_only_uri
from expdna.store.index.revision import HEAD

log = logging.getLogger(__name__)

_HEX = re.compile(r"[0-9a-f]{6,64}")
_COLUMNS = (
    'run_id, dna, generated_at, recorded_at, "commit", algorithm, gpu_model, driver_version, '
    "cuda_version, nccl_version, python_version, family, unknown, state"
)
#: Newest first, ties by run id: as ``expdna.store.queries`` orders them.
_ORDER = "ORDER BY generated_at DESC, run_id DESC"


def _when(value: str | datetime) -> datetime:
    # SQLAlchemy writes SQLite DateTime as "YYYY-MM-DD HH:MM:SS[.ffffff]", naive UTC.
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def _summary(row: tuple[object, ...]) -> RunSummary:
    (run_id, dna, generated, recorded, commit, algorithm, gpu, driver, cuda, nccl, python,
     family, unknown, state) = row  # fmt: skip
    return RunSummary(
        run_id=str(run_id),
        dna=str(dna),
        generated_at=_when(generated),  # type: ignore[arg-type]
        recorded_at=_when(recorded),  # type: ignore[arg-type]
        commit=commit,  # type: ignore[arg-type]
        algorithm=algorithm,  # type: ignore[arg-type]
        gpu_model=gpu,  # type: ignore[arg-type]
        driver_version=driver,  # type: ignore[arg-type]
        cuda_version=cuda,  # type: ignore[arg-type]
        nccl_version=nccl,  # type: ignore[arg-type]
        python_version=python,  # type: ignore[arg-type]
        family=family,  # type: ignore[arg-type]
        unknown=unknown,  # type: ignore[arg-type]
        state=state,  # type: ignore[arg-type]
    )


def _open(database: Path) -> sqlite3.Connection | None:
    if not database.is_file():
        return None
    try:
        conn = sqlite3.connect(read_only_uri(database), uri=True, timeout=2.0)
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.Error as exc:
        log.debug("quick read of %s not possible: %s", database, exc)
        return None
    if row is None or row[0] != HEAD:
        conn.close()
        return None
    return conn


def _target(conn: sqlite3.Connection, ref: str) -> tuple[str, str | None] | None:
    """(DNA, family) of a run id, or of the one DNA a prefix names; None otherwise."""
    found = conn.execute("SELECT dna, family FROM runs WHERE run_id = ?", (ref,)).fetchone()
    if found is not None:
        return str(found[0]), found[1]
    prefix = ref.lower()
    if _HEX.fullmatch(prefix) is None:
        return None
    upper = prefix + "g"  # after every DNA with this prefix: hex sorts below "g"
    dnas = conn.execute(
        "SELECT DISTINCT dna FROM runs WHERE dna >= ? AND dna < ? ORDER BY dna LIMIT 2",
        (prefix, upper),
    ).fetchall()
    if len(dnas) != 1:
        return None
    newest = conn.execute(
        f"SELECT family FROM runs WHERE dna = ? {_ORDER} LIMIT 1", (dnas[0][0],)
    ).fetchone()
    return str(dnas[0][0]), newest[0]


def twins(database: Path, ref: str, *, across_seeds: bool = False) -> list[RunSummary] | None:
    """``Store.twins(ref, across_seeds=...)`` from the SQLite file ``database``, or None when
    only the store can answer (see the module doc)."""
    conn = _open(database)
    if conn is None:
        return None
    try:
        target = _target(conn, ref)
        if target is None:
            return None
        dna, family = target
        if across_seeds and family is None:
            return None  # recorded before family digests: the store reads its manifest
        column, value = ("family", family) if across_seeds else ("dna", dna)
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM runs WHERE {column} = ? {_ORDER}", (value,)
        ).fetchall()
        return [_summary(row) for row in rows]
    except sqlite3.Error as exc:
        log.debug("quick read of %s failed: %s", database, exc)
        return None
    finally:
        conn.close()
