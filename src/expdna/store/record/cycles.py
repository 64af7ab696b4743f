"""Lineage stays a DAG whichever way its edges arrive.

``expdna link`` refuses an edge that closes a cycle; a manifest's ``lineage`` list gets the
same rule when the store records it: a run whose listed parent already descends from it
(through recorded edges, or edges of runs earlier in the same batch) is refused, and the
rest of the batch is recorded. Runs without a ``lineage`` list cost nothing here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, select

from expdna.store.index.bulk import chunks
from expdna.store.index.models import Lineage
from expdna.store.record.prepare import Prepared


def _parents(conn: Connection, children: Iterable[str]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for part in chunks(sorted(set(children))):
        rows = conn.execute(
            select(Lineage.child_run_id, Lineage.parent_run_id).where(
                Lineage.child_run_id.in_(part)
            )
        )
        for child, parent in rows:
            found.setdefault(child, set()).add(parent)
    return found


def _descends(
    conn: Connection, start: Iterable[str], run_id: str, pending: dict[str, set[str]]
) -> bool:
    """Whether ``run_id`` is among ``start`` or their ancestors."""
    seen: set[str] = set()
    frontier = set(start)
    while frontier:
        if run_id in frontier:
            return True
        seen |= frontier
        stored = _parents(conn, frontier)
        following: set[str] = set()
        for node in frontier:
            following |= stored.get(node, set()) | pending.get(node, set())
        frontier = following - seen
    return False


def cyclic(conn: Connection, batch: Sequence[Prepared]) -> dict[str, str]:
    """run id -> the refusal, for each run of ``batch`` (in order) whose lineage would
    close a cycle with recorded edges or with those of the runs accepted before it."""
    refused: dict[str, str] = {}
    pending: dict[str, set[str]] = {}
    for prepared in batch:
        if not prepared.lineage:
            continue
        parents = {parent for _, parent in prepared.lineage}
        if _descends(conn, parents, prepared.run_id, pending):
            named = ", ".join(sorted(parents))
            refused[prepared.run_id] = (
                f"{prepared.source or 'run ' + prepared.run_id}: lineage would make a cycle: "
                f"run {prepared.run_id} is already an ancestor of its parent ({named})"
            )
            continue
        pending.setdefault(prepared.run_id, set()).update(parents)
    return refused
