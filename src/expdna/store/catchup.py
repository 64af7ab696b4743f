"""Pending log entries applied to the index, by whichever process opens it next.

The training hook writes runs, pins and metrics as log entries only
(:mod:`expdna.store.deferred`), each with a marker under ``objects/log/pending``. Every
open of the index for writing (and a read of one that can be written) applies them here,
oldest first, through the functions ``reindex`` replays the log with: a ``record`` entry's
runs are prepared again from their manifest objects and written with the entry's time,
``pin``, ``link`` and ``metrics`` entries by :func:`expdna.store.logged.appliers`. Each
entry is applied and marked applied in one transaction, then its marker removed; an entry
found applied already (another process was first) only loses its marker. A ``pin`` entry
whose run is not recorded yet (an older hook pinned before it recorded the run) is applied
right after that run's later ``record`` entry; until one comes it stays pending. A fact the index
refuses (a run recorded with other content, a metrics update for a run that is not there)
is logged as a warning: the entry stays in the log, as a refused ``expdna pin`` leaves
nothing, and ``fsck`` names it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sqlalchemy import Connection, select

from expdna.errors import ExpdnaError
from expdna.store.index.applied import log_applied
from expdna.store.index.engine import Index
from expdna.store.index.models import StoreLogEntry
from expdna.store.objects.interface import LogStore, ObjectStore
from expdna.store.objects.log import LogEntry

if TYPE_CHECKING:
    from expdna.store.index.intern import InternCache, Interned
    from expdna.store.logged import Apply

log = logging.getLogger(__name__)


def _applied(conn: Connection, name: str) -> bool:
    found = conn.execute(select(StoreLogEntry.name).where(StoreLogEntry.name == name)).first()
    return found is not None


def apply_pending(objects: ObjectStore, index: Index, store_log: LogStore) -> int:
    """Apply every pending entry; returns how many this call applied."""
    names = store_log.pending()
    if not names:
        return 0
    from expdna.store.index.intern import InternCache
    from expdna.store.logged import appliers

    apply = appliers()
    cache = InternCache()
    done = 0
    #: run id -> pin entries that name it before its record entry was applied
    waiting: dict[str, list[LogEntry]] = {}
    for name in names:
        try:
            entry = store_log.read(name)
        except FileNotFoundError:  # withdrawn: its transaction failed
            store_log.clear_pending(name)
            continue
        except (OSError, ValueError) as exc:
            log.warning("pending log entry %s not applied: %s", name, exc)
            store_log.clear_pending(name)
            continue
        if entry.kind != "record":
            result = index.write_retrying(
                functools.partial(_apply_other, entry=entry, apply=apply), logged=True
            )
            if isinstance(result, str):  # a pin before its run's record: it stays pending
                waiting.setdefault(result, []).append(entry)
                continue
            store_log.clear_pending(name)
            done += result
            continue
        done += _apply_record(objects, index, entry, cache)
        store_log.clear_pending(name)
        for run in entry.body.get("runs", []):
            for pin in waiting.pop(str(run[0]), []):
                applied = index.write_retrying(
                    functools.partial(_apply_other, entry=pin, apply=apply, wait=False),
                    logged=True,
                )
                done += applied is True
                store_log.clear_pending(pin.name)
    for run_id, pins in waiting.items():
        log.info(
            "%d pending pin entries wait for run %s to be recorded (first %s)",
            len(pins),
            run_id,
            pins[0].name,
        )
    if done:
        log.info("applied %d pending log entries to index", done)
    return done


def _apply_other(
    conn: Connection, *, entry: LogEntry, apply: Mapping[str, Apply], wait: bool = True
) -> bool | str:
    """Apply one entry; whether this call applied it, or (``wait``) the id of the run a
    pin entry names that is not recorded yet."""
    if _applied(conn, entry.name):
        return False
    if wait:
        from expdna.store.pins import waits_for_run

        run_id = waits_for_run(conn, entry)
        if run_id is not None:
            return run_id
    try:
        with conn.begin_nested():
            apply[entry.kind](conn, entry)
    except ExpdnaError as exc:
        log.warning("log entry %s (%s) not applied: %s", entry.name, entry.kind, exc)
    log_applied(conn, entry.name, entry.kind)
    return True


def _apply_record(objects: ObjectStore, index: Index, entry: LogEntry, cache: InternCache) -> bool:
    from expdna.store.record.samerun import same_run
    from expdna.store.record.write import write_batch
    from expdna.store.reindex import prepare_runs_of

    batch, problems = prepare_runs_of(objects, entry.name, entry.body.get("runs", []))
    for problem in problems:
        log.warning("%s", problem)

    def body(conn: Connection) -> Interned | bool | None:
        if _applied(conn, entry.name):
            return False
        refused: dict[str, str] = {}
        statuses, interned = write_batch(
            conn, batch, cache, refused, recorded_at=entry.at, same=same_run(objects)
        )
        log_applied(conn, entry.name, entry.kind)
        for prepared, status in zip(batch, statuses, strict=True):
            if status == "conflict":
                log.warning(
                    "run %s (log entry %s): recorded already with other content; left out",
                    prepared.run_id,
                    entry.name,
                )
            elif status == "failed":
                log.warning("run %s: %s", prepared.run_id, refused.get(prepared.run_id))
        return interned

    done = index.write_retrying(body, logged=True)
    if done is False:
        return False
    if done is not None and done is not True:  # ids of a committed transaction only
        cache.add(done)
    return True
