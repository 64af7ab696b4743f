"""Setting an SQLite file's journal mode when other processes open it at the same moment.

Two processes creating one database (two training runs started at once on a new store,
or both filling a new digest cache) both switch the empty file's journal mode; the one
that loses SQLite's lock race gets "database is locked" at once, without the busy handler
(SQLite returns SQLITE_BUSY instead of waiting where waiting could deadlock), so a busy
timeout alone does not cover it.
"""

from __future__ import annotations

import random
import sqlite3
import time
from typing import Protocol


class _Executes(Protocol):
    def execute(self, sql: str, /) -> object: ...


def set_journal_mode(target: _Executes, mode: str, timeout_s: float) -> None:
    """``PRAGMA journal_mode=<mode>`` on ``target``, again while the file is locked."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            target.execute(f"PRAGMA journal_mode={mode}")
            return
        except sqlite3.OperationalError as exc:
            if "database is locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.005, 0.05))
