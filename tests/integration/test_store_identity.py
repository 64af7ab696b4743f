"""A store's id, in its object directory and its index: an index refuses writes with another
store's directory or an empty one (exit 2, naming both), reads name the directory they
looked in, and one store's directory may be mounted at any path. On SQLite and on the
team's real PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import create_engine

from expdna.cli import cli as cli_group
from expdna.manifest.io import write_manifest
from expdna.store import SQLITE_NAME, Store
from expdna.store.identity import ID_FILE
from expdna.store.index.migrate import alembic_config
from tests.factories import synthetic


def cli(root: Path, *args: str, index_url: str | None = None) -> Result:
    options = ["--store", str(root)] + (["--index-url", index_url] if index_url else [])
    return CliRunner().invoke(cli_group, [*options, *args], env={"EXPDNA_INDEX_URL": None})


def _one_line(result: Result) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_an_index_refuses_another_stores_directory_and_an_empty_one(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for root, i in ((ours, 0), (theirs, 1)):
        with Store.open(root) as store:
            store.record(synthetic(i))
    url = f"sqlite:///{ours / SQLITE_NAME}"
    manifest = write_manifest(synthetic(2), tmp_path / "m.json")
    own_id = (ours / "objects" / ID_FILE).read_text().strip()
    their_id = (theirs / "objects" / ID_FILE).read_text().strip()

    crossed = cli(theirs, "record", str(manifest), index_url=url)
    assert crossed.exit_code == 2
    line = _one_line(crossed)
    assert own_id in line and their_id in line and str(theirs / "objects") in line

    empty = tmp_path / "empty"
    refused = cli(empty, "record", str(manifest), index_url=url)
    assert refused.exit_code == 2
    line = _one_line(refused)
    assert own_id in line and str(empty / "objects") in line and "no store" in line
    assert not empty.exists()  # nothing written, not even the directory
    with Store.open(ours) as store:
        assert len(store.runs()) == 1


def test_a_store_upgraded_from_before_ids_gets_one(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with Store.open(root) as store:
        store.record(synthetic(0))
    (root / "objects" / ID_FILE).unlink()
    engine = create_engine(f"sqlite:///{root / SQLITE_NAME}")
    with engine.begin() as conn:  # the revision before store ids and the log
        from alembic import command

        command.downgrade(alembic_config(conn), "5d88e8697123")
    engine.dispose()
    done = cli(root, "record", str(write_manifest(synthetic(1), tmp_path / "m.json")))
    assert done.exit_code == 0, done.output
    assert (root / "objects" / ID_FILE).is_file()
    with Store.open(root) as store:
        assert len(store.runs()) == 2
        assert store.fsck().ok


@pytest.mark.postgres
def test_a_shared_postgres_index_with_the_wrong_directory(pg_url: str, tmp_path: Path) -> None:
    team = tmp_path / "nfs" / "expdna"
    assert cli(team, "db", "upgrade", index_url=pg_url).exit_code == 0
    recorded = cli(
        team, "record", str(write_manifest(synthetic(0), tmp_path / "m0.json")), index_url=pg_url
    )
    assert recorded.exit_code == 0, recorded.output
    store_id = (team / "objects" / ID_FILE).read_text().strip()

    mine = tmp_path / "home" / "my-store"  # a team member's own, empty, --store
    refused = cli(
        mine, "record", str(write_manifest(synthetic(1), tmp_path / "m1.json")), index_url=pg_url
    )
    assert refused.exit_code == 2
    line = _one_line(refused)
    assert store_id in line and str(mine / "objects") in line and "127.0.0.1" in line
    assert not mine.exists()
    run_id = synthetic(0).run_id
    shown = cli(mine, "show", "--inline", run_id, index_url=pg_url)
    assert shown.exit_code == 1
    assert str(mine / "objects") in _one_line(shown) and "missing" in shown.stderr
    checked = cli(mine, "fsck", index_url=pg_url)
    assert checked.exit_code == 1 and store_id in checked.stdout and str(mine) in checked.stdout

    mounted = tmp_path / "mnt" / "team"  # the same directory, mounted elsewhere
    mounted.parent.mkdir()
    mounted.symlink_to(team)
    again = cli(
        mounted, "record", str(write_manifest(synthetic(2), tmp_path / "m2.json")), index_url=pg_url
    )
    assert again.exit_code == 0, again.output
    assert cli(mounted, "show", "--inline", run_id, index_url=pg_url).exit_code == 0
    assert cli(mounted, "fsck", index_url=pg_url).exit_code == 0
