"""The setup digest (expdna.manifest.family.setup_of): what ``explain --same-setup`` selects
by. Code, config, training and data with seeds pooled; hardware, environment and runtime
left out; the same whichever way the recorder computes it."""

from __future__ import annotations

import copy
import sqlite3
from pathlib import Path

from expdna.manifest.family import family_of, setup_of
from expdna.store import Store
from expdna.store.record.prepare import prepare_doc
from expdna.store.record.sections import SectionMemo
from tests.factories import invoke, manifest_of
from tests.fleets import fleet_doc


def test_setup_pools_seeds_and_machines_but_not_the_experiment() -> None:
    base = fleet_doc(1, seed=0)
    other_machine = fleet_doc(2, seed=3, vbios="x", driver="y", nccl="z", host="h")
    other_machine["environment"]["packages"]["torch"] = "9.9.9"
    other_machine["runtime"]["node_count"] = 2
    other_lr = copy.deepcopy(base)
    other_lr["config"]["resolved_args"]["lr"] = 0.1
    other_lr["command"]["argv"] = ["python", "train.py", "--lr", "0.1"]
    other_data = copy.deepcopy(base)
    other_data["data"]["datasets"][0]["files"] = 4
    setup = setup_of(base)
    assert setup_of(other_machine) == setup
    assert family_of(other_machine) != family_of(base)  # the family keeps the machine
    assert setup_of(other_lr) != setup and setup_of(other_data) != setup
    assert setup not in (family_of(base), manifest_of(base).dna.value)  # type: ignore[union-attr]


def test_the_recorder_writes_the_setup_digest_on_both_paths() -> None:
    memo = SectionMemo()
    for i, seed in enumerate((0, 1, 1)):
        doc = fleet_doc(i, seed=seed)
        ignored = copy.deepcopy(doc)
        ignored["config"]["dna_ignore"] = ["config.resolved_args.option_1"]
        for checked in (doc, ignored):
            expected = setup_of(checked)
            assert prepare_doc(copy.deepcopy(checked)).row["setup"] == expected
            assert prepare_doc(copy.deepcopy(checked), memo=memo).row["setup"] == expected


def test_db_upgrade_and_reindex_fill_the_setup_digest(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = Store.open(root)
    docs = [fleet_doc(i, seed=i) for i in range(3)]
    store.record_many(manifest_of(d) for d in docs)
    store.close()
    db = root / "index.sqlite"
    with sqlite3.connect(db) as conn:
        expected = conn.execute("SELECT DISTINCT setup FROM runs").fetchall()
        conn.execute("UPDATE runs SET setup = NULL")
    assert expected == [(setup_of(docs[0]),)]
    upgraded = invoke(root, "db", "upgrade")
    assert upgraded.exit_code == 0, upgraded.output
    assert "family and setup digests filled in for 3 runs" in upgraded.output
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT DISTINCT setup FROM runs").fetchall() == expected
    rebuilt = invoke(root, "reindex")
    assert rebuilt.exit_code == 0, rebuilt.output
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT DISTINCT setup FROM runs").fetchall() == expected
