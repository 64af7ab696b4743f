"""The one read layer (expdna.store.index.read): the same SQL answers alike on the standard
library's sqlite3, through SQLAlchemy on the same SQLite file, and on PostgreSQL holding
the same store; and a read leaves a store it cannot write as it found it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from expdna.store import SQLITE_NAME, Store
from expdna.store.config import StoreConfig
from expdna.store.fsck import fsck
from expdna.store.index.engine import open_index
from expdna.store.index.models import SECTION_COLUMNS
from expdna.store.index.read import EngineReader, EngineReads, IndexReads, SqliteFile, expand, when
from expdna.store.index.revision import HEAD
from expdna.store.index.schema import stored_id, stored_revision
from expdna.store.lineage import report
from expdna.store.queries import (
    SECTIONS,
    Filter,
    named_filter,
    resolve,
    select_ids,
    select_runs,
    unknown_paths,
)
from expdna.store.reindex import reindex
from expdna.store.stability import stability
from tests.factories import dna, record_docs, run, seed_doc, synthetic_doc

_FILTERS = [
    [named_filter("driver", "535.104.05"), named_filter("vbios", "96.00.5A.00.01")],
    [Filter(("training.algorithm",), "grpo")],
    [Filter(("config.resolved_args.seed",), "1e0")],  # a number matches by value
    [Filter(("status.state",), "completed"), Filter(("run_id",), "nope")],
    [Filter(("no.such.path",), "x")],
]


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, list[str]]:
    """A store of five runs (three of one setup, two of those one DNA), one pin, a link."""
    root = tmp_path / "store"
    with Store.open(root) as store:
        runs = record_docs(
            store,
            seed_doc(1, seed=1, final_loss=0.5),
            seed_doc(2, seed=2, final_loss=0.7),
            seed_doc(3, seed=1, final_loss=0.6),  # the DNA of the first
            synthetic_doc(4, setup=2),
            synthetic_doc(5, setup=3),
        )
        run_ids = [m.run_id for m in runs]
        store.pin(run_id=run_ids[0], digest="ab" * 32, name="best.pt")
        store.link(run_ids[0], run_ids[2], "resumed_from")
    return root, run_ids


def _answers(reads: IndexReads, store: Store, run_ids: list[str]) -> dict[str, Any]:
    """Every query, read through ``reads``."""
    with reads.read() as conn:
        first = resolve(conn, run_ids[0])
        found: dict[str, Any] = {
            "resolve": [asdict(resolve(conn, r)) for r in run_ids],
            "prefix": asdict(resolve(conn, first.dna[:8])),
            "all": select_runs(conn),
            "limited": select_runs(conn, limit=2),
            "dna": select_runs(conn, dna=first.dna),
            "family": select_runs(conn, family=first.family),
            "since": select_runs(conn, since=datetime(2000, 1, 1)),
            "filters": [select_runs(conn, filters=f) for f in _FILTERS],
            "ids": [select_ids(conn, filters=f) for f in _FILTERS],
            "unknown": [unknown_paths(conn, f) for f in _FILTERS],
            "revision": stored_revision(reads),
            "store_id": stored_id(conn),
        }
    found["lineage"] = asdict(report(reads, run_ids[2]))
    found["fsck"] = asdict(fsck(store.objects, reads, store.log))
    found["stability"] = stability(store, run_ids[0], across_seeds=True).to_dict()
    found["which"] = store.which("best.pt")
    return found


def test_sqlite3_and_sqlalchemy_answer_alike_on_one_file(
    recorded: tuple[Path, list[str]],
) -> None:
    root, run_ids = recorded
    index = open_index(root, None, read_only=True)
    with Store.open_for_reading(root) as store:
        assert isinstance(store.reads, SqliteFile)
        plain = _answers(store.reads, store, run_ids)
        engine = _answers(EngineReads(index), store, run_ids)
    index.dispose()
    assert plain == engine
    assert plain["revision"] == HEAD and plain["store_id"] is not None
    assert [len(runs) for runs in plain["filters"]] == [5, 5, 2, 0, 0]
    assert [r.run_id for r in plain["dna"]] == [run_ids[2], run_ids[0]]
    assert len(plain["family"]) == 3 and plain["fsck"]["problems"] == []
    assert plain["unknown"][4] == {"no.such.path": []}


@pytest.mark.postgres
def test_postgres_answers_as_sqlite_for_the_same_store(
    recorded: tuple[Path, list[str]], pg_url: str
) -> None:
    root, run_ids = recorded
    reindex(StoreConfig(path=root, index_url=pg_url))  # the same objects, the same times
    with Store.open_for_reading(root) as local, Store.open_for_reading(root, pg_url) as shared:
        assert isinstance(shared.reads, EngineReads) and shared.reads.dialect == "postgresql"
        assert _answers(shared.reads, shared, run_ids) == _answers(local.reads, local, run_ids)


def test_the_layer_binds_lists_and_times_as_each_database_needs() -> None:
    sql, params = expand("a IN :xs AND b IN :none AND t >= :t", {"xs": [1, 2], "none": [],
                         "t": datetime(2026, 1, 2, 3, 4, 5)}, "sqlite")  # fmt: skip
    assert sql == "a IN (:xs__0, :xs__1) AND b IN (NULL) AND t >= :t"
    assert params == {"xs__0": 1, "xs__1": 2, "t": "2026-01-02 03:04:05.000000"}
    assert expand("t >= :t", {"t": datetime(2026, 1, 2)}, "postgresql")[1] == {
        "t": datetime(2026, 1, 2)
    }
    assert when("2026-01-02 03:04:05.000000") == datetime(2026, 1, 2, 3, 4, 5)
    assert tuple(SECTION_COLUMNS) == SECTIONS  # the SQL names the models' digest columns


def test_a_read_opens_the_index_read_only(recorded: tuple[Path, list[str]]) -> None:
    root, _ = recorded
    reads = SqliteFile(root / SQLITE_NAME)
    with reads.read() as conn, pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.rows("DELETE FROM runs")


def test_every_read_command_answers_through_the_one_layer(
    recorded: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """The commands as users run them, on a local SQLite store: twins by a run, by a DNA
    prefix, an unknown run (exit 1) and a malformed ref (exit 2), then the same through
    SQLAlchemy (an index URL naming the same file): the same output."""
    root, run_ids = recorded
    url = ["--index-url", f"sqlite:///{root / SQLITE_NAME}"]
    with Store.open_for_reading(root) as store:
        prefix = dna(store.load(run_ids[0]))[:8]
    cases: list[tuple[list[str], int]] = [
        (["twins", run_ids[0]], 0),
        (["twins", prefix, "--across-seeds", "--json"], 0),
        (["twins", "20990101_000000_nogit_none"], 1),
        (["twins", "not a ref!"], 2),
    ]
    answer: Callable[[list[str]], tuple[int, str, str]] = lambda args: (  # noqa: E731
        (done := run(root, *args)).returncode,
        done.stdout,
        done.stderr,
    )
    for args, code in cases:
        plain = answer(args)
        assert plain[0] == code, (args, plain)
        assert answer([*url, *args]) == plain, args


def test_sqlalchemy_selects_take_the_same_conditions(recorded: tuple[Path, list[str]]) -> None:
    """The web view and explain build their own selects over ``runs``: the read layer's
    condition text inside them matches the runs the layer itself lists."""
    from sqlalchemy import select

    from expdna.store.index.models import Run
    from expdna.store.index.selects import filtered

    root, _ = recorded
    with Store.open_for_reading(root) as store, store.index.read() as conn:
        for filters in _FILTERS:
            stmt = filtered(conn, select(Run.run_id, Run.dna), filters=filters,
                            since=datetime(2000, 1, 1))  # fmt: skip
            found = [] if stmt is None else [tuple(r) for r in conn.execute(stmt)]
            expected = select_ids(EngineReader(conn), filters=filters)
            assert sorted(found) == sorted(expected), filters
