"""The store with a shared PostgreSQL index: revisions, models vs migrations, recording
and queries, on the real server (127.0.0.1:5432, trust auth).

The fixtures (pg_url, pg_store: one throwaway database per session) are in conftest.py;
the concurrent recorders on PostgreSQL are in test_store_concurrency.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from expdna.store import Store
from expdna.store.errors import IndexRevisionError, IndexUnavailableError
from expdna.store.index.engine import open_index
from expdna.store.index.migrate import HEAD, alembic_config, current_revision, upgrade
from expdna.store.index.models import Base
from expdna.store.queries import named_filter
from tests.factories import VBIOS, synthetic

pytestmark = pytest.mark.postgres


def test_an_empty_postgres_index_names_the_upgrade_command(pg_url: str, tmp_path: Path) -> None:
    with pytest.raises(IndexRevisionError, match="db upgrade") as caught:
        Store.open(tmp_path, pg_url)
    assert caught.value.exit_code == 2
    index = open_index(tmp_path, pg_url)
    assert upgrade(index) == (None, HEAD)
    assert upgrade(index) == (HEAD, HEAD)
    with index.read() as conn:
        assert current_revision(conn) == HEAD
    index.dispose()
    Store.open(tmp_path, pg_url).close()


def test_a_downgraded_postgres_index_names_the_upgrade_command(pg_url: str, tmp_path: Path) -> None:
    from alembic import command

    index = open_index(tmp_path, pg_url)
    upgrade(index)
    with index.write() as conn:
        command.downgrade(alembic_config(conn), "base")
        assert current_revision(conn) is None
    index.dispose()
    with pytest.raises(IndexRevisionError, match=r"expdna .*db upgrade"):
        Store.open(tmp_path, pg_url)


def test_models_and_migrations_agree_on_postgres(pg_url: str, tmp_path: Path) -> None:
    from alembic import command
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    index = open_index(tmp_path, pg_url)
    upgrade(index)
    with index.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
        command.check(alembic_config(conn))
    index.dispose()


def test_a_plain_postgresql_url_gets_psycopg3(pg_url: str, tmp_path: Path) -> None:
    index = open_index(tmp_path, pg_url.replace("postgresql+psycopg://", "postgresql://"))
    assert index.url.drivername == "postgresql+psycopg"
    index.dispose()


def test_an_unreachable_server_is_one_error_line(tmp_path: Path) -> None:
    with pytest.raises(IndexUnavailableError, match=r"127\.0\.0\.1:1") as caught:
        Store.open(tmp_path, "postgresql+psycopg://nobody@127.0.0.1:1/none?connect_timeout=2")
    assert "\n" not in str(caught.value)


def test_record_and_query_on_postgres(pg_store: Store) -> None:
    manifests = [synthetic(i, setup=i // 2, vbios=VBIOS if i % 4 == 0 else "x") for i in range(30)]
    results = pg_store.record_many(manifests, batch_size=8)
    assert {r.status for r in results} == {"recorded"}
    assert {r.status for r in pg_store.record_many(manifests)} == {"skipped"}
    assert len(pg_store.find(named_filter("vbios", VBIOS))) == 8
    assert len(pg_store.twins(manifests[3].run_id)) == 2
    run = pg_store.runs(limit=1)[0]
    assert pg_store.get(run.dna[:6]).dna == run.dna
    manifest = next(m for m in manifests if m.run_id == run.run_id)
    assert pg_store.load(run.run_id) == manifest
    assert pg_store.fsck().ok


def test_postgres_statements_are_planned_for_their_parameters(pg_store: Store) -> None:
    """No server-side prepared statements: a generic plan of the batch lookups scans a
    whole path's values (see expdna.store.index.engine)."""
    from sqlalchemy import select

    from expdna.store.index.models import Run

    with pg_store.index.read() as conn:
        for _ in range(8):  # psycopg would prepare from the fifth run on
            conn.execute(select(Run.id).where(Run.run_id.in_(["a", "b"]))).all()
        prepared = conn.exec_driver_sql("SELECT count(*) FROM pg_prepared_statements")
        assert prepared.scalar_one() == 0
