"""Shared fixtures: the public conformance data, real git repositories and a real
PostgreSQL index. Plain helpers and factories are in factories.py."""

from __future__ import annotations

import getpass
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from expdna.store import Store
from tests.factories import DATA, git
from tests.secret_scan import pytest_sessionfinish  # noqa: F401  (detect-secrets at the end)


@pytest.fixture(scope="session")
def testdata() -> Path:
    """``tests/data``: the JCS vectors and nvidia-smi captures (see its README)."""
    return DATA


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real git repository with one commit."""
    path = tmp_path / "proj"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "train.py").write_text("print('train')\n")
    git(path, "add", "train.py")
    git(path, "commit", "-q", "-m", "first")
    return path


# --- PostgreSQL (127.0.0.1:5432, trust auth) -----------------------------------------------
# One throwaway database per test session, dropped at the end; each test starts from an
# empty ``public`` schema. When the server is down these tests fail in CI (``CI=true``) and
# are skipped, saying why, elsewhere.

PG_HOST = "127.0.0.1"
PG_PORT = 5432


def _pg_admin() -> tuple[Any, str]:
    import psycopg

    errors = []
    for user in dict.fromkeys(("postgres", getpass.getuser())):
        try:
            conn = psycopg.connect(
                host=PG_HOST,
                port=PG_PORT,
                dbname="postgres",
                user=user,
                autocommit=True,
                connect_timeout=5,
            )
            return conn, user
        except psycopg.OperationalError as exc:
            errors.append(f"{user}: {str(exc).strip().splitlines()[0]}")
    reason = f"PostgreSQL at {PG_HOST}:{PG_PORT} unreachable ({'; '.join(errors)})"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason + "; start it (.ci/run does) to run these tests")


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A throwaway database for this session; its URL (psycopg 3)."""
    admin, user = _pg_admin()
    name = f"expdna_test_{secrets.token_hex(6)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://{user}@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture
def pg_url(pg_database: str) -> str:
    """The session database with an empty public schema."""
    import psycopg

    plain = pg_database.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    return pg_database


@pytest.fixture
def pg_store(pg_url: str, tmp_path: Path) -> Iterator[Store]:
    """A store on ``tmp_path/shared`` whose index is the session database, upgraded."""
    from expdna.store.index.engine import open_index
    from expdna.store.index.migrate import upgrade

    index = open_index(tmp_path, pg_url)
    upgrade(index)
    index.dispose()
    store = Store.open(tmp_path / "shared", pg_url)
    yield store
    store.close()
