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
from typing import Literal

from sqlalchemy import Connection, select
from sqlalchemy.orm import InstrumentedAttribute

from expdna.errors import InvalidInputError
from expdna.manifest.lineage import RELATIONS
from expdna.store.entities import LineageEdge, LineageReport
from expdna.store.errors import RunNotFoundError
from expdna.store.index.bulk import chunks, insert_ignore
from expdna.store.index.engine import Index
from expdna.store.index.models import LINEAGE_KEY, Lineage, Run
from expdna.store.logged import write_logged
from expdna.store.objects.interface import LogStore
from expdna.store.objects.log import LogEntry
from expdna.store.queries import resolve


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


def walk(conn: Connection, run_id: str, direction: Direction) -> list[LineageEdge]:
    """Every edge reachable from ``run_id`` towards parents or children, nearest first."""
    near: InstrumentedAttribute[str]
    far: InstrumentedAttribute[str]
    if direction == "ancestor":
        near, far = Lineage.child_run_id, Lineage.parent_run_id
    else:
        near, far = Lineage.parent_run_id, Lineage.child_run_id
    found: list[LineageEdge] = []
    visited = {run_id}
    frontier = [run_id]
    depth = 0
    while frontier:
        depth += 1
        following: set[str] = set()
        for part in chunks(sorted(frontier)):
            rows = conn.execute(
                select(
                    Lineage.parent_run_id, Lineage.child_run_id, Lineage.relation, Lineage.source
                )
                .where(near.in_(part))
                .order_by(far, Lineage.relation)
            )
            for parent, child, relation, source in rows:
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


def with_runs(conn: Connection, edges: Sequence[LineageEdge]) -> list[LineageEdge]:
    """Edges with the DNA and time of each related run that is recorded."""
    known: dict[str, tuple[str, datetime]] = {}
    for part in chunks(sorted({edge.run_id for edge in edges})):
        rows = conn.execute(
            select(Run.run_id, Run.dna, Run.generated_at).where(Run.run_id.in_(part))
        )
        known.update({run_id: (dna, moment) for run_id, dna, moment in rows})
    return [
        replace(edge, dna=known[edge.run_id][0], generated_at=known[edge.run_id][1])
        if edge.run_id in known
        else edge
        for edge in edges
    ]


def has_edges(conn: Connection, run_id: str) -> bool:
    for column in (Lineage.child_run_id, Lineage.parent_run_id):
        if conn.execute(select(Lineage.id).where(column == run_id).limit(1)).first():
            return True
    return False


def check_link(conn: Connection, parent: str, child: str, relation: str) -> None:
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
    check_relation(relation)
    with index.read() as conn:
        parent_id, child_id = resolve(conn, parent).run_id, resolve(conn, child).run_id
        check_link(conn, parent_id, child_id, relation)
    body = {"parent": parent_id, "child": child_id, "relation": relation}
    return write_logged(index, log, "link", body, apply_entry)


def report(index: Index, ref: str) -> LineageReport:
    """:meth:`expdna.store.Store.lineage`."""
    with index.read() as conn:
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
