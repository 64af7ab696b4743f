"""Lineage: which runs a run resumes, reruns or derives from, and which runs continue it.

An edge is ``child <relation> parent`` by run id (a child may be recorded before its
parent). Edges come from a manifest's optional top-level ``lineage`` list, recorded with the
run, or from ``expdna link``. Walking is breadth first, one indexed query per generation
(``child_run_id`` for ancestors, the unique key led by ``parent_run_id`` for descendants),
and every run is visited once, so a cycle in recorded edges ends the walk instead of
looping.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Literal

from expdna.errors import InvalidInputError
from expdna.manifest.lineage import RELATIONS
from expdna.store.entities import LineageEdge, LineageReport
from expdna.store.errors import RunNotFoundError
from expdna.store.index.chunks import chunks
from expdna.store.index.read import IndexReads, Reader, reader_of, when
from expdna.store.objects.log import LogEntry
from expdna.store.queries import resolve

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from expdna.store.index.engine import Index
    from expdna.store.objects.interface import LogStore

    Conn = Reader | Connection


def check_relation(relation: str) -> str:
    if relation not in RELATIONS:
        raise InvalidInputError(
            f"unknown relation {relation!r}: expected one of {', '.join(RELATIONS)}"
        )
    return relation


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def insert_edges(
    conn: Connection,
    edges: Iterable[tuple[str, str, str]],
    source: str,
    at: datetime | None = None,
) -> int:
    """Insert (parent, child, relation) edges not present yet; returns how many were new."""
    from expdna.store.index.bulk import insert_ignore
    from expdna.store.index.models import LINEAGE_KEY, Lineage

    moment = at or now()
    rows = [
        {
            "parent_run_id": parent,
            "child_run_id": child,
            "relation": relation,
            "source": source,
            "recorded_at": moment,
        }
        for parent, child, relation in sorted(set(edges))
    ]
    if not rows:
        return 0
    added = 0
    for row in rows:  # one statement a row: a returned id says it was new
        stmt = insert_ignore(conn, Lineage, LINEAGE_KEY).values(**row).returning(Lineage.id)
        added += len(conn.execute(stmt).all())
    return added


Direction = Literal["ancestor", "descendant"]

#: (the column holding the run walked from, the column holding the next run) per direction.
_SIDES: dict[Direction, tuple[str, str]] = {
    "ancestor": ("child_run_id", "parent_run_id"),
    "descendant": ("parent_run_id", "child_run_id"),
}


def walk(conn: Conn, run_id: str, direction: Direction) -> list[LineageEdge]:
    """Every edge reachable from ``run_id`` towards parents or children, nearest first."""
    reader = reader_of(conn)
    near, far = _SIDES[direction]
    sql = (
        "SELECT parent_run_id, child_run_id, relation, source FROM lineage "
        f"WHERE {near} IN :part ORDER BY {far}, relation"
    )
    found: list[LineageEdge] = []
    visited = {run_id}
    frontier = [run_id]
    depth = 0
    while frontier:
        depth += 1
        following: set[str] = set()
        for part in chunks(sorted(frontier)):
            for parent, child, relation, source in reader.rows(sql, {"part": part}):
                other = parent if direction == "ancestor" else child
                found.append(
                    LineageEdge(
                        direction=direction,
                        depth=depth,
                        relation=relation,
                        parent=parent,
                        child=child,
                        source=source,
                        run_id=other,
                    )
                )
                if other not in visited:
                    visited.add(other)
                    following.add(other)
        frontier = sorted(following)
    return found


def with_runs(conn: Conn, edges: Sequence[LineageEdge]) -> list[LineageEdge]:
    """Edges with the DNA and time of each related run that is recorded."""
    reader = reader_of(conn)
    known: dict[str, tuple[str, datetime]] = {}
    for part in chunks(sorted({edge.run_id for edge in edges})):
        rows = reader.rows(
            "SELECT run_id, dna, generated_at FROM runs WHERE run_id IN :part", {"part": part}
        )
        known.update({run_id: (dna, when(moment)) for run_id, dna, moment in rows})
    return [
        replace(edge, dna=known[edge.run_id][0], generated_at=known[edge.run_id][1])
        if edge.run_id in known
        else edge
        for edge in edges
    ]


def has_edges(conn: Conn, run_id: str) -> bool:
    reader = reader_of(conn)
    for column in ("child_run_id", "parent_run_id"):
        sql = f"SELECT id FROM lineage WHERE {column} = :run_id LIMIT 1"
        if reader.first(sql, {"run_id": run_id}) is not None:
            return True
    return False


def check_link(conn: Conn, parent: str, child: str, relation: str) -> None:
    """Refuse (exit 2) an edge from a run to itself or one that would close a cycle."""
    check_relation(relation)
    if parent == child:
        raise InvalidInputError(f"cannot link run {child} to itself")
    if any(edge.run_id == child for edge in walk(conn, parent, "ancestor")):
        raise InvalidInputError(
            f"{child} is already an ancestor of {parent}: linking would make a cycle"
        )


def link(
    conn: Connection, parent: str, child: str, relation: str, at: datetime | None = None
) -> bool:
    """Record ``child <relation> parent`` (source ``link``); True when it was new."""
    check_link(conn, parent, child, relation)
    return insert_edges(conn, [(parent, child, relation)], "link", at) > 0


def apply_entry(conn: Connection, entry: LogEntry) -> bool:
    """A ``link`` log entry's edge (``expdna link``, or ``reindex`` replaying it)."""
    body = entry.body
    return link(conn, str(body["parent"]), str(body["child"]), str(body["relation"]), entry.at)


def link_runs(index: Index, log: LogStore, parent: str, child: str, relation: str) -> bool:
    """:meth:`expdna.store.Store.link`: both runs resolved and the edge checked, logged,
    then one write transaction."""
    from expdna.store.logged import write_logged

    check_relation(relation)
    with index.read() as conn:
        parent_id, child_id = resolve(conn, parent).run_id, resolve(conn, child).run_id
        check_link(conn, parent_id, child_id, relation)
    body = {"parent": parent_id, "child": child_id, "relation": relation}
    return write_logged(index, log, "link", body, apply_entry)


def report(reads: IndexReads, ref: str) -> LineageReport:
    """:meth:`expdna.store.Store.lineage`."""
    with reads.read() as conn:
        try:
            run = resolve(conn, ref)
            run_id, dna = run.run_id, run.dna
        except RunNotFoundError:
            if not has_edges(conn, ref):
                raise
            run_id, dna = ref, None
        ancestors = with_runs(conn, walk(conn, run_id, "ancestor"))
        descendants = with_runs(conn, walk(conn, run_id, "descendant"))
    return LineageReport(run_id=run_id, dna=dna, ancestors=ancestors, descendants=descendants)
