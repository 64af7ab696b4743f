"""Pins: a checkpoint's BLAKE3 digest (never the file) bound to a run, its DNA and a name.

``pins`` is indexed on digest, name and run, so ``which`` is one index lookup however many
runs are recorded. Pinning the same bytes under the same name to the same run again
changes nothing but the remembered path and size (the file may have moved).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, insert, select, text, update

from expdna.digest import ALGORITHM
from expdna.store.entities import PinRecord
from expdna.store.index.engine import Index
from expdna.store.index.models import Pin, Run
from expdna.store.logbodies import pin_body
from expdna.store.logged import write_logged
from expdna.store.objects.interface import LogStore
from expdna.store.objects.log import LogEntry
from expdna.store.queries import resolve, run_pk

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement

_COLUMNS = (
    Run.run_id,
    Run.generated_at,
    Pin.dna,
    Pin.digest,
    Pin.name,
    Pin.path,
    Pin.size,
    Pin.pinned_at,
)


def _record(row: Any, matches: bool | None = None) -> PinRecord:
    values = row._mapping
    return PinRecord(
        run_id=values["run_id"],
        dna=values["dna"],
        digest=values["digest"],
        name=values["name"],
        path=values["path"],
        size=values["size"],
        pinned_at=values["pinned_at"],
        generated_at=values["generated_at"],
        matches=matches,
    )


def _same_name(name: str | None) -> ColumnElement[bool]:
    return Pin.name.is_(None) if name is None else Pin.name == name


def add_pin(
    conn: Connection,
    *,
    run_pk: int,
    dna: str,
    digest: str,
    name: str | None,
    path: str | None,
    size: int | None,
    pinned_at: datetime | None = None,
) -> PinRecord:
    """Insert the pin (inside a write transaction) unless the run holds it already."""
    if conn.dialect.name == "postgresql":
        # Two writers pinning the same bytes at once would both see "absent": serialise
        # them on the digest (60 bits of it: a signed bigint key).
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": int(digest[:15], 16)})
    existing = conn.execute(
        select(Pin.id, Pin.path, Pin.size)
        .where(
            Pin.run_pk == run_pk, Pin.digest == digest, Pin.algorithm == ALGORITHM, _same_name(name)
        )
        .limit(1)
    ).first()
    if existing is None:
        conn.execute(
            insert(Pin).values(
                run_pk=run_pk,
                dna=dna,
                digest=digest,
                algorithm=ALGORITHM,
                name=name,
                path=path,
                size=size,
                pinned_at=pinned_at or datetime.now(timezone.utc).replace(tzinfo=None),
            )
        )
    elif (path, size) != (existing.path, existing.size) and path is not None:
        conn.execute(update(Pin).where(Pin.id == existing.id).values(path=path, size=size))
    found = select_pins(conn, (Pin.run_pk == run_pk) & (Pin.digest == digest) & _same_name(name))
    return found[0]


def select_pins(conn: Connection, condition: ColumnElement[bool]) -> list[PinRecord]:
    """Pins matching ``condition`` with their runs, newest pin first."""
    rows = conn.execute(
        select(*_COLUMNS)
        .join(Run, Run.id == Pin.run_pk)
        .where(condition, Pin.algorithm == ALGORITHM)
        .order_by(Pin.pinned_at.desc(), Pin.id.desc())
    )
    return [_record(row) for row in rows]


def by_digest(conn: Connection, digest: str) -> list[PinRecord]:
    return select_pins(conn, Pin.digest == digest)


def by_name(conn: Connection, name: str) -> list[PinRecord]:
    return select_pins(conn, Pin.name == name)


def apply_entry(conn: Connection, entry: LogEntry) -> PinRecord:
    """A ``pin`` log entry's rows (recording it, or ``reindex`` replaying it)."""
    body = entry.body
    run = resolve(conn, str(body["run_id"]))
    return add_pin(
        conn,
        run_pk=run_pk(conn, run.run_id),
        dna=run.dna,
        digest=str(body["digest"]),
        name=body.get("name"),
        path=body.get("path"),
        size=body.get("size"),
        pinned_at=entry.at,
    )


def pin(
    index: Index,
    log: LogStore,
    *,
    run_id: str,
    digest: str,
    name: str | None = None,
    path: str | None = None,
    size: int | None = None,
) -> PinRecord:
    """:meth:`expdna.store.Store.pin`: checked, logged, then one write transaction."""
    body = pin_body(run_id, digest, name, path, size)
    with index.read() as conn:
        run = resolve(conn, run_id)
    body["run_id"] = run.run_id
    return write_logged(index, log, "pin", body, apply_entry)
