"""The standard-library read path answers exactly as the store does, or not at all."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from expdna.store import SQLITE_NAME, Store
from expdna.store.quickread import twins
from tests.factories import collide_prefix, dna, record_docs, run, seed_doc, synthetic_doc


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "store"
    with Store.open(root) as store:
        runs = record_docs(
            store,
            seed_doc(1, seed=1),
            seed_doc(2, seed=2),
            seed_doc(3, seed=1),  # the same DNA as the first
            synthetic_doc(4, setup=2),
        )
    return root, [m.run_id for m in runs]


def test_every_answer_equals_the_stores(recorded: tuple[Path, list[str]]) -> None:
    root, run_ids = recorded
    with Store.open(root) as store:
        refs = [*run_ids, *(dna(store.load(r))[:8] for r in run_ids)]
        for ref in refs:
            for across in (False, True):
                quick = twins(root / SQLITE_NAME, ref, across_seeds=across)
                assert quick is not None, ref
                assert quick == store.twins(ref, across_seeds=across), (ref, across)
    three = twins(root / SQLITE_NAME, run_ids[0], across_seeds=True)
    assert three is not None and {r.run_id for r in three} == set(run_ids[:3])


def test_anything_but_the_plain_case_is_left_to_the_store(
    recorded: tuple[Path, list[str]], tmp_path: Path
) -> None:
    root, run_ids = recorded
    database = root / SQLITE_NAME
    assert twins(database, "20990101_000000_nogit_none") is None  # unknown run: its error
    assert twins(database, "not a ref!") is None
    assert twins(tmp_path / "nowhere" / SQLITE_NAME, run_ids[0]) is None
    with Store.open(root) as store:
        target = dna(store.load(run_ids[3]))
        collide_prefix(store, run_ids[0], target)
    assert twins(database, target[:6]) is None  # ambiguous: the store lists the candidates
    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE runs SET family = NULL WHERE run_id = ?", (run_ids[1],))
    assert twins(database, run_ids[1], across_seeds=True) is None  # family from its manifest
    assert twins(database, run_ids[1]) is not None
    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE alembic_version SET version_num = 'abc123'")
    assert twins(database, run_ids[2]) is None  # another revision: the store decides


def test_the_command_gives_the_same_output_either_way(recorded: tuple[Path, list[str]]) -> None:
    root, run_ids = recorded
    quick = run(root, "twins", run_ids[0])
    assert quick.returncode == 0, quick.stderr
    # The same store behind a URL is read through SQLAlchemy.
    url = f"sqlite:///{root / SQLITE_NAME}"
    slow = run(root, "--index-url", url, "twins", run_ids[0])
    assert slow.returncode == 0, slow.stderr
    assert quick.stdout == slow.stdout
    missing = run(root, "twins", "zzzz")  # left to the store: its own error and exit code
    assert (missing.returncode, missing.stderr) == (1, "expdna: error: no recorded run 'zzzz'\n")
