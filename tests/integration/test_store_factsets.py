"""Fact sets on a real SQLite index: a repeated section is stored once, a run's own leaves
stay its own, and every fact answers queries whichever way it is stored (including runs
recorded before fact sets existed, whose facts are all in ``facts``)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from sqlalchemy import Connection, func, select

from expdna.manifest.io import manifest_from_dict
from expdna.store import Filter, Store
from expdna.store.index.migrate import alembic_config
from expdna.store.index.models import Fact, FactSet, FactSetMember, Run, RunFactSet
from expdna.store.queries import named_filter
from expdna.store.record.factsets import is_own, partition, set_digest
from tests.factories import synthetic, synthetic_doc

RUNS = 12


def _count(conn: Connection, entity: type) -> int:
    return int(conn.execute(select(func.count()).select_from(entity)).scalar_one())


def _history(store: Store) -> None:
    # One machine and one environment for all; two setups (DNAs); output_dir per run.
    store.record_many([synthetic(i, setup=i % 2) for i in range(RUNS)])


def test_the_per_run_rules() -> None:
    assert is_own("config.resolved_args.output_dir")
    assert is_own("config.resolved_args.wandb_project")
    assert not is_own("config.resolved_args.lr")
    assert is_own("config.selected_env.MASTER_ADDR")
    assert not is_own("config.selected_env.NCCL_DEBUG")
    assert is_own("runtime.nodes.node_id")
    assert is_own("runtime.nodes.resources.node:10.0.0.1")
    assert not is_own("runtime.nodes.resources.GPU")
    assert not is_own("hardware.gpus.vbios_version")
    assert is_own("metrics.reward.note") and is_own("collection.collectors.git.status")


def test_partition_keeps_every_fact_once() -> None:
    facts = {
        ("hardware.gpu_model", "H100"),
        ("config.resolved_args.lr", "0.1"),
        ("config.resolved_args.output_dir", "/ckpt/1"),
        ("metrics.note", "ok"),
    }
    sets, own = partition(facts)
    assert own == {("config.resolved_args.output_dir", "/ckpt/1"), ("metrics.note", "ok")}
    assert set(sets) == {
        frozenset({("hardware.gpu_model", "H100")}),
        frozenset({("config.resolved_args.lr", "0.1")}),
    }
    assert set_digest(sets[0]) != set_digest(sets[1])
    assert set_digest(frozenset(sets[0])) == set_digest(sets[0])


def test_a_set_digest_is_the_blake3_of_its_sorted_pairs_as_json_dumps_writes_them() -> None:
    """The identity every index shares: json.dumps's default separators, text unescaped."""
    import json

    from expdna.digest import hex_of

    for facts in (
        frozenset({("a.b", "1"), ("a.c", 'quote " and \\ slash')}),
        frozenset({("config.resolved_args.note", "Ünïcödé ✓ 𝄞"), ("x", "\n\t")}),
        frozenset(),
    ):
        expected = hex_of(json.dumps(sorted(facts), ensure_ascii=False).encode("utf-8"))
        assert set_digest(facts) == expected


def test_a_repeated_section_is_stored_once(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        _history(store)
        with store.index.read() as conn:
            runs = _count(conn, Run)
            sets = _count(conn, FactSet)
            links = _count(conn, RunFactSet)
            own = _count(conn, Fact)
            # the sets holding the hardware facts: one, whatever the number of runs
            gpu_sets = conn.execute(
                select(func.count(func.distinct(FactSetMember.set_id))).where(
                    FactSetMember.value_id.in_(_value_ids(conn, "hardware.gpu_model"))
                )
            ).scalar_one()
    assert runs == RUNS
    assert gpu_sets == 1
    # per run: a link per section, and only its own leaves (output_dir, metrics, notes)
    assert links <= RUNS * 9
    assert own <= RUNS * 4
    # sets: the shared sections once, config and training once per setup (2)
    assert sets <= 9 + 2 * 2


def _value_ids(conn: Connection, path: str) -> list[int]:
    from expdna.store.index.models import FactPath, FactValue

    return list(
        conn.execute(
            select(FactValue.id)
            .join(FactPath, FactPath.id == FactValue.path_id)
            .where(FactPath.path == path)
        ).scalars()
    )


def test_queries_match_set_facts_and_own_facts(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        _history(store)
        odd = {r.run_id for r in store.find(Filter(("config.resolved_args.seed",), "1"))}
        assert odd == {synthetic(i, setup=1).run_id for i in range(1, RUNS, 2)}
        one = store.find(Filter(("config.resolved_args.output_dir",), "/ckpt/run5"))
        assert [r.run_id for r in one] == [synthetic(5).run_id]
        both = store.find(
            Filter(("config.resolved_args.seed",), "1"),
            Filter(("config.resolved_args.output_dir",), "/ckpt/run5"),
        )
        assert [r.run_id for r in both] == [synthetic(5).run_id]
        assert (
            store.find(
                Filter(("config.resolved_args.seed",), "0"),
                Filter(("config.resolved_args.output_dir",), "/ckpt/run5"),
            )
            == []
        )
        assert len(store.find(named_filter("driver", "535.104.05"))) == RUNS


def test_runs_recorded_before_fact_sets_still_answer(tmp_path: Path) -> None:
    """Down to the revision before fact sets (which copies set facts into ``facts``), up
    again (empty set tables): the runs' facts are where older expdna wrote them."""
    with Store.open(tmp_path / "s") as store:
        _history(store)
        with store.index.write() as conn:
            command.downgrade(alembic_config(conn), "61bc45721a88")
        with store.index.read() as conn:
            facts_only = _count(conn, Fact)
        with store.index.write() as conn:
            command.upgrade(alembic_config(conn), "head")
            assert _count(conn, RunFactSet) == 0
        assert facts_only > RUNS * 40  # every leaf of every run, a row each
        assert len(store.find(Filter(("hardware.gpus.vbios_version",), "96.00.5A.00.01"))) == RUNS
        odd = store.find(Filter(("config.resolved_args.seed",), "1"))
        assert len(odd) == RUNS // 2
    # and a run recorded by a newer expdna (a fresh process: its caches hold no ids from
    # before the migration), with sets, next to them
    with Store.open(tmp_path / "s") as store:
        doc = synthetic_doc(100, setup=1)
        doc["run_id"] = "20260805_150000_1c8e2fb_new"
        store.record(manifest_from_dict(doc))
        assert len(store.find(Filter(("config.resolved_args.seed",), "1"))) == RUNS // 2 + 1
