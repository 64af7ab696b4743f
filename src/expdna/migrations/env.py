"""Alembic environment for the expdna index.

Run by :mod:`expdna.store.index.migrate` with an open connection in
``config.attributes["connection"]`` (inside the caller's transaction), or by the
``alembic`` command with ``sqlalchemy.url`` set. SQLite gets batch mode, which rebuilds a
table to alter it; the metadata's naming convention gives every constraint the name batch
mode needs.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine, pool

from expdna.store.index.models import Base

config = context.config
target_metadata = Base.metadata


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        return
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("expdna migrations need a connection or sqlalchemy.url")
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as conn:
        _configure(conn)
        conn.commit()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
