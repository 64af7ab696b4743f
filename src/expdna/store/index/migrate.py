"""Schema revisions: alembic shipped in ``expdna/migrations``, driven without an ini file.

Opening a store reads one row (``alembic_version``) and compares it with :data:`HEAD`;
alembic itself is imported only to upgrade. The embedded SQLite index upgrades itself on
open; a shared PostgreSQL index is upgraded on purpose (``expdna db upgrade``), because
every client of a team's index must be new enough for the new schema first.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from sqlalchemy import Connection, inspect, text

from expdna.store.errors import IndexRevisionError
from expdna.store.index.engine import Index, shown

# The newest revision in expdna/migrations/versions (a test holds it equal to alembic's).
from expdna.store.index.revision import HEAD as HEAD

if TYPE_CHECKING:
    from alembic.config import Config

log = logging.getLogger(__name__)

SCRIPT_LOCATION = "expdna:migrations"

#: Any integer: serialises concurrent upgrades of one PostgreSQL index.
_PG_LOCK = 0x65787064


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def current_revision(conn: Connection) -> str | None:
    """The index's revision, or None for an empty database."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
    return None if row is None else str(row[0])


def _upgrade_in(conn: Connection) -> str | None:
    """Upgrade to head inside ``conn``'s transaction; returns the revision it found."""
    from alembic import command

    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK})
    found = current_revision(conn)
    if found is not None and found != HEAD and not known(found):
        raise IndexRevisionError(
            f"index is at revision {found}, newer than this expdna knows (head {HEAD}): "
            "upgrade expdna"
        )
    if found != HEAD:
        log.info("upgrading index from %s to %s", found or "(empty)", HEAD)
        command.upgrade(alembic_config(conn), "head")
    return found


def upgrade(index: Index) -> tuple[str | None, str]:
    """Bring the index to :data:`HEAD` (one writer at a time); returns (before, after)."""
    with index.write() as conn:
        before = _upgrade_in(conn)
    return before, HEAD


def revision(index: Index) -> str | None:
    """The index's revision (None: no expdna tables), in a read transaction."""
    with index.read() as conn:
        return current_revision(conn)


def upgradable(found: str | None) -> bool:
    """Whether an index at ``found`` is behind this expdna (and so can be upgraded)."""
    return found != HEAD and (found is None or known(found))


def ensure_current(index: Index, *, auto_upgrade: bool) -> None:
    """Check the index is at :data:`HEAD`; upgrade it when allowed, else say how."""
    with index.read() as conn:
        found = current_revision(conn)
    if found == HEAD:
        return
    where = shown(index.url)
    if found is not None and not known(found):
        raise IndexRevisionError(
            f"index {where} is at revision {found}, newer than this expdna knows "
            f"(head {HEAD}): upgrade expdna"
        )
    if auto_upgrade:
        upgrade(index)
        return
    if found is None:
        raise IndexRevisionError(
            f"index {where} has no expdna tables yet: run `expdna --index-url URL db upgrade`"
        )
    raise IndexRevisionError(
        f"index {where} is at revision {found}, this expdna needs {HEAD}: "
        "run `expdna --index-url URL db upgrade`"
    )


def known(revision: str) -> bool:
    """Whether ``revision`` is one of this expdna's migrations."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    return any(rev.revision == revision for rev in script.walk_revisions())
