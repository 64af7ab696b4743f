"""Pins: a checkpoint's BLAKE3 digest (never the file) bound to a run, its DNA and a name.

``pins`` is indexed on digest, name and run, so ``which`` is one index lookup however many
runs are recorded. Pinning the same bytes under the same name to the same run again
changes nothing but the remembered path and size (the file may have moved).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from expdna.digest import ALGORITHM
from expdna.store.entities import PinRecord
from expdna.store.index.read import Reader, Row, reader_of, when
from expdna.store.logbodies import pin_body
from expdna.store.objects.log import LogEntry
from expdna.store.objects.pinned import mark_path
from expdna.store.queries import resolve, run_pk

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Connection

    from expdna.store.index.engine import Index
    from expdna.store.objects.interface import LogStore

    Conn = Reader | Connection

_SELECT = (
    "SELECT runs.run_id, runs.generated_at, pins.dna, pins.digest, pins.name, pins.path, "
    "pins.size, pins.pinned_at FROM pins JOIN runs ON runs.id = pins.run_pk"
)
_NEWEST = "ORDER BY pins.pinned_at DESC, pins.id DESC"


def _record(row: Row, matches: bool | None = None) -> PinRecord:
    run_id, generated_at, dna, digest, name, path, size, pinned_at = row
    return PinRecord(
        run_id=run_id,
        dna=dna,
        digest=digest,
        name=name,
        path=path,
        size=size,
        pinned_at=when(pinned_at),
        generated_at=when(generated_at),
        matches=matches,
    )


def _same_name(name: str | None) -> ColumnElement[bool]:
    from expdna.store.index.models import Pin

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
    from sqlalchemy import insert, select, text, update

    from expdna.store.index.models import Pin

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
    found = select_pins(
        conn,
        "pins.run_pk = :run_pk AND pins.digest = :digest AND "
        + ("pins.name IS NULL" if name is None else "pins.name = :name"),
        {"run_pk": run_pk, "digest": digest, "name": name},
    )
    return found[0]


def select_pins(
    conn: Conn, condition: str, params: dict[str, Any] | None = None
) -> list[PinRecord]:
    """Pins matching ``condition`` (SQL over ``pins``) with their runs, newest pin first."""
    rows = reader_of(conn).rows(
        f"{_SELECT} WHERE {condition} AND pins.algorithm = :algorithm {_NEWEST}",
        {**(params or {}), "algorithm": ALGORITHM},
    )
    return [_record(row) for row in rows]


def by_digest(conn: Conn, digest: str) -> list[PinRecord]:
    return select_pins(conn, "pins.digest = :digest", {"digest": digest})


def by_name(conn: Conn, name: str) -> list[PinRecord]:
    return select_pins(conn, "pins.name = :name", {"name": name})


def waits_for_run(conn: Connection, entry: LogEntry) -> str | None:
    """The run a ``pin`` entry names when no run of that exact id is recorded yet (the
    training hook of an older expdna could log a pin before its run's ``record`` entry):
    catch-up and ``reindex`` apply it after that run's record. ``None`` otherwise."""
    from expdna.manifest.runid import RUN_ID

    run_id = entry.body.get("run_id") if entry.kind == "pin" else None
    if not isinstance(run_id, str) or RUN_ID.fullmatch(run_id) is None:
        return None
    found = reader_of(conn).scalar("SELECT id FROM runs WHERE run_id = :run_id", {"run_id": run_id})
    return run_id if found is None else None


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
    from expdna.store.logged import write_logged

    body = pin_body(run_id, digest, name, path, size)
    with index.read() as conn:
        run = resolve(conn, run_id)
    body["run_id"] = run.run_id
    record = write_logged(index, log, "pin", body, apply_entry)
    mark_path(log, body.get("path"))
    return record
