"""How a run ended, told to the store after the run was recorded.

A run is recorded while it runs (``status.state`` ``running``); its end arrives later as a
``status`` log entry, as final metrics do (:mod:`expdna.store.metrics`): the stored
manifest (an immutable object) keeps what was recorded, and the index is brought up to
date: the ``runs.state`` column and the run's own facts under ``status.`` (``--where
status.exit_code=3``). ``reindex`` replays the entry through :func:`apply_entry`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, delete, select, update

from expdna.manifest.status import checked_status, outranks
from expdna.store.index.bulk import bulk_insert, chunks
from expdna.store.index.engine import Index
from expdna.store.index.intern import InternCache, intern_pairs
from expdna.store.index.models import Fact, FactPath, FactValue, Run
from expdna.store.logged import write_logged
from expdna.store.objects.interface import LogStore
from expdna.store.objects.log import LogEntry
from expdna.store.queries import run_pk
from expdna.store.record.flatten import flatten

_PREFIX = "status."


def replace_status(conn: Connection, run: int, status: dict[str, Any]) -> None:
    """Set the run's state column and replace its ``status.`` facts (in a write transaction)."""
    state = status.get("state")
    conn.execute(update(Run).where(Run.id == run).values(state=state))
    path_ids = (
        conn.execute(select(FactPath.id).where(FactPath.path >= _PREFIX, FactPath.path < "status/"))
        .scalars()
        .all()
    )
    for ids in chunks(list(path_ids)):
        conn.execute(
            delete(Fact).where(
                Fact.run_pk == run,
                Fact.value_id.in_(select(FactValue.id).where(FactValue.path_id.in_(ids))),
            )
        )
    facts, _ = flatten({"status": status})
    if facts:
        interned = intern_pairs(conn, facts, InternCache())
        bulk_insert(
            conn,
            Fact,
            ("value_id", "run_pk"),
            sorted((interned.values[pair], run) for pair in facts),
        )


def apply_entry(conn: Connection, entry: LogEntry) -> str | None:
    """A ``status`` log entry's rows (recording it, or ``reindex`` replaying it): an end
    replaces the run's status only when it is worse (``outranks``), so whichever rank's
    entry comes first, the worst end stands, and of equal ends the first (rank 0's real
    error, not another rank's "connection closed by peer" that followed it)."""
    status = dict(entry.body["status"])
    run = run_pk(conn, str(entry.body["run_id"]))
    # FOR UPDATE on PostgreSQL: two ranks' entries at once must not both read `running`.
    current = conn.execute(select(Run.state).where(Run.id == run).with_for_update()).scalar()
    if current is not None and not outranks(status.get("state"), current):
        return str(current)
    replace_status(conn, run, status)
    state = status.get("state")
    return str(state) if state is not None else None


def record_status(
    index: Index, log: LogStore, run_id: str, status: Mapping[str, Any]
) -> str | None:
    """:meth:`expdna.store.Store.record_status`: checked, logged, one write transaction."""
    clean = checked_status(status)
    with index.read() as conn:
        run_pk(conn, run_id)  # an unknown run is refused before anything is written
    return write_logged(index, log, "status", {"run_id": run_id, "status": clean}, apply_entry)
