"""Index-only facts written through the log: the entry first, then the row that applies it.

``pin``, ``link``, metrics and status updates each write one log entry (expdna.store.objects.log)
and then, in one index transaction, the rows and the entry's name. ``reindex`` replays the
same entries through the same functions (:data:`APPLY`), so a rebuilt index holds what the
old one held, times included.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection

from expdna.store.errors import unwritable
from expdna.store.index.applied import log_applied
from expdna.store.index.engine import Index
from expdna.store.interrupts import interrupt_deferred
from expdna.store.objects.interface import LogStore
from expdna.store.objects.log import LogEntry

T = TypeVar("T")

#: How an entry of a kind changes the index, given a write transaction.
Apply = Callable[[Connection, LogEntry], Any]


def write_logged(
    index: Index,
    log: LogStore,
    kind: str,
    body: dict[str, Any],
    apply: Callable[[Connection, LogEntry], T],
) -> T:
    """Append the entry, then apply it and mark it applied in one transaction. An entry
    whose transaction fails is withdrawn: the index was never told it."""

    def transaction(conn: Connection) -> T:
        result = apply(conn, entry)
        log_applied(conn, entry.name, entry.kind)
        return result

    with interrupt_deferred():  # no Ctrl-C between the commit and knowing it committed
        try:
            entry = log.append(kind, body)
        except OSError as exc:
            raise unwritable(Path(log.root).parent.parent, exc) from None
        try:
            return index.write_retrying(transaction, logged=True)
        except BaseException:
            log.withdraw(entry.name)
            raise


def appliers() -> dict[str, Apply]:
    """Kind -> how to apply it (imported on use: each module pulls its own tables)."""
    from expdna.store import lineage, metrics, pins, status

    return {
        "pin": pins.apply_entry,
        "link": lineage.apply_entry,
        "metrics": metrics.apply_entry,
        "status": status.apply_entry,
    }
