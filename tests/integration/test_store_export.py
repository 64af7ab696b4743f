"""Final metrics added after recording, and ``expdna export --parquet``: real Parquet files
read back with pyarrow (and pandas where installed), on SQLite, PostgreSQL and the command."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from expdna.errors import InvalidInputError
from expdna.store import Store
from expdna.store.errors import InvalidRunRefError, RunNotFoundError
from expdna.store.queries import parse_where
from tests.factories import DRIVER, invoke, run, synthetic

SECTIONS = ("code", "config", "training", "environment", "hardware", "runtime", "data")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "store") as opened:
        opened.record_many(
            [synthetic(i, setup=i // 2, driver=DRIVER if i % 2 else "535.104.05") for i in range(6)]
        )
        yield opened


def rid(i: int) -> str:
    return synthetic(i).run_id


# --- metrics after recording --------------------------------------------------------


def _metrics_update(store: Store) -> None:
    before = store.get(rid(1))
    after = store.record_metrics(
        rid(1), {"final_loss": 0.125, "val_acc": 0.9, "status": "converged", "reward": {"max": 2}}
    )
    # `reward` replaced whole (reward.mean gone), other names kept, identity unchanged
    assert after == {"final_loss": 0.125, "reward.max": 2.0, "val_acc": 0.9}
    assert store.metrics(rid(1)) == after
    assert store.get(rid(1)) == before
    assert [r.run_id for r in store.find(parse_where("metrics.status=converged"))] == [rid(1)]
    store.record_metrics(rid(1), {"status": "diverged", "val_acc": "n/a"})
    assert store.find(parse_where("metrics.status=converged")) == []
    assert [r.run_id for r in store.find(parse_where("metrics.val_acc=n/a"))] == [rid(1)]
    assert "val_acc" not in store.metrics(rid(1))
    assert store.metrics(rid(0)) == {"final_loss": 1.0, "reward.mean": 0.5}
    assert store.fsck().ok


def test_record_metrics_updates_a_recorded_run(store: Store) -> None:
    _metrics_update(store)


def test_record_metrics_refuses_unknown_runs_and_bad_values(store: Store) -> None:
    with pytest.raises(RunNotFoundError):
        store.record_metrics("20990101_000000_nogit_x", {"loss": 1.0})
    with pytest.raises(InvalidRunRefError):
        store.record_metrics("../x", {"loss": 1.0})
    for bad in ({"loss": object()}, {"": 1.0}, {3: 1.0}, [("loss", 1.0)]):
        with pytest.raises(InvalidInputError):
            store.record_metrics(rid(0), bad)  # type: ignore[arg-type]
    assert store.metrics(rid(0)) == {"final_loss": 1.0, "reward.mean": 0.5}


@pytest.mark.postgres
def test_record_metrics_on_postgres(pg_store: Store) -> None:
    pg_store.record_many([synthetic(i, setup=i // 2) for i in range(6)])
    _metrics_update(pg_store)


# --- export -------------------------------------------------------------------------


def _read(path: Path) -> tuple[pa.Schema, list[dict[str, Any]]]:
    table = pq.read_table(path)
    return table.schema, table.to_pylist()


def _exported(store: Store, tmp_path: Path) -> None:
    store.record_metrics(rid(3), {"val_acc": 0.75, "note": "text is not a column"})
    target = tmp_path / "runs.parquet"
    assert store.export_parquet(target) == 6
    schema, rows = _read(target)
    assert schema.field("generated_at").type == pa.timestamp("us", tz="UTC")
    assert schema.field("dna_version").type == pa.int32()
    for name in (
        "run_id",
        "dna",
        "commit",
        "algorithm",
        "gpu_model",
        "driver",
        "cuda",
        "nccl",
        "python",
        *(f"{s}_digest" for s in SECTIONS),
    ):
        assert schema.field(name).type == pa.string(), name
    metric_columns = [n for n in schema.names if n.startswith("metric_")]
    assert metric_columns == ["metric_final_loss", "metric_reward.mean", "metric_val_acc"]
    assert all(schema.field(n).type == pa.float64() for n in metric_columns)

    assert [r["run_id"] for r in rows] == [rid(i) for i in range(6)]  # oldest first
    record = store.get(rid(3))
    third = rows[3]
    assert third["dna"] == record.dna and third["commit"] == record.commit
    assert third["driver"] == DRIVER and third["python"] == "3.12.3"
    assert {s: third[f"{s}_digest"] for s in SECTIONS} == record.sections
    assert third["generated_at"] == datetime(2026, 8, 5, 0, 0, 3, tzinfo=timezone.utc)
    assert (third["metric_val_acc"], third["metric_final_loss"]) == (0.75, 0.25)
    assert rows[0]["metric_val_acc"] is None

    filtered = tmp_path / "filtered.parquet"
    count = store.export_parquet(
        filtered,
        where=[parse_where(f"hardware.driver_version={DRIVER}")],
        since=datetime(2026, 8, 5, 0, 0, 2),
    )
    assert count == 2
    assert [r["run_id"] for r in _read(filtered)[1]] == [rid(3), rid(5)]
    try:
        import pandas  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # pandas is optional; pyarrow's reading above is the proof
        return
    frame = pandas.read_parquet(target)
    assert list(frame["run_id"]) == [rid(i) for i in range(6)]
    assert str(frame["generated_at"].dtype) == "datetime64[us, UTC]"


def test_export_reads_back_typed(store: Store, tmp_path: Path) -> None:
    _exported(store, tmp_path)


@pytest.mark.postgres
def test_export_on_postgres(pg_store: Store, tmp_path: Path) -> None:
    pg_store.record_many(
        [synthetic(i, setup=i // 2, driver=DRIVER if i % 2 else "535.104.05") for i in range(6)]
    )
    _exported(pg_store, tmp_path)


def test_export_replaces_the_file_atomically_in_row_groups(store: Store, tmp_path: Path) -> None:
    from expdna.store.export import export_parquet

    target = tmp_path / "runs.parquet"
    target.write_bytes(b"an older export")
    assert export_parquet(store.reads, target, row_group=4) == 6
    assert pq.read_metadata(target).num_row_groups == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.parquet", "store"]
    empty = tmp_path / "none.parquet"
    assert store.export_parquet(empty, where=[parse_where("training.algorithm=ppo")]) == 0
    schema, rows = _read(empty)
    assert rows == [] and "run_id" in schema.names
    assert store.export_parquet(empty, where=[parse_where("no.such.path=1")]) == 0
    with pytest.raises(InvalidInputError, match="no such directory"):
        store.export_parquet(tmp_path / "absent" / "x.parquet")
    with pytest.raises(InvalidInputError, match="is a directory"):
        store.export_parquet(tmp_path)
    assert not (tmp_path / "absent").exists()


def test_export_through_the_installed_command(store: Store, tmp_path: Path) -> None:
    root = store.root
    target = tmp_path / "out.parquet"
    done = run(
        root,
        "export",
        "--parquet",
        str(target),
        "--where",
        "training.algorithm=grpo",
        "--since",
        "2026-08-05T00:00:04Z",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"exported 2 runs to {target}"
    assert [r["run_id"] for r in _read(target)[1]] == [rid(4), rid(5)]
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(target).st_mode & 0o777 == 0o666 & ~mask  # not mkstemp's private 0o600
    assert invoke(root, "export", "--parquet", str(tmp_path / "no" / "x.parquet")).exit_code == 2
    assert invoke(root, "export", "--parquet", str(target), "--since", "soon").exit_code == 2
    assert invoke(root, "export").exit_code == 2


def test_find_ids_is_find_without_the_summaries(store: Store) -> None:
    where = parse_where(f"hardware.driver_version={DRIVER}")
    found = store.find(where)
    assert store.find_ids(where) == [(r.run_id, r.dna) for r in found]
    assert store.find_ids(where, limit=1) == [(found[0].run_id, found[0].dna)]
    assert store.find_ids(parse_where("no.such.path=1")) == []
