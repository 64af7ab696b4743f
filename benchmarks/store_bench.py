"""The store at scale: record throughput, query latency and index size on a synthetic but
realistic history, next to MLflow 3.17's figures for the same payload on this machine.

History: manifests of ~80 leaves (tests/unit/test_store_factory.py), every DNA shared by 2
runs, 1 % of runs on one VBIOS, 20 drivers, one pinned checkpoint every 10 runs. Each size
is a fresh store; runs are recorded through ``Store.record_many``, 10,000 a call in batches
of 500 (manifests are built outside the timed part), then ``expdna record --scan`` records
more manifest files through the installed command.

    python benchmarks/store_bench.py [--sizes 10000,100000] [--postgres] [--dir DIR]

``--postgres`` adds 100,000 runs on PostgreSQL (a throwaway database on --pg-url's
server). ``--sizes 1000000`` works too but takes ~15 minutes on 2 cores, so it is not a
default. ``--dir`` puts the stores elsewhere (the object directory is one file per run:
its filesystem's file-creation cost is part of the record figure, and is printed as a
baseline; see file_create_us for why each run wants a new directory on this VM).

Targets (issue "The store"): >= 2,000 runs/s batched record; at 1M runs twins and which
< 5 ms, find by VBIOS (~1 % of runs, ids and DNA) < 100 ms, show < 5 ms; index <= 4 KB a
run; latency not growing linearly with history size. MLflow baselines measured on this
machine (SQLAlchemy/SQLite store): ~54 runs/s bulk ingest, 19.3 KB of database a run,
lookup by a dna tag 15 ms at 10k runs, every run on one VBIOS 190 ms at 10k and 1.1 s at
57k, get_run 3.5 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.unit.test_store_factory import synthetic_doc

from expdna.digest.refs import ref
from expdna.manifest.dna import compute_dna
from expdna.manifest.io import manifest_from_dict, write_manifest
from expdna.manifest.model import Manifest
from expdna.store import Store
from expdna.store.queries import named_filter

VBIOS = "96.00.89.00.01"
DRIVERS = [f"550.{54 + k}.{k:02d}" for k in range(20)]
PIN_EVERY = 10
BATCH = 500
#: Runs a record_many call: from its second batch on, a call overlaps checking a batch
#: with writing the previous one's blobs (expdna.store.record.recorder).
CALL = 10_000
LOOKUPS = 50
MLFLOW = {
    "ingest_runs_s": 54.0,
    "bytes_per_run": 19.3 * 1024,
    "vbios_ms_10k": 190.0,
    "vbios_ms_57k": 1100.0,
    "dna_tag_ms_10k": 15.0,
    "dna_tag_ms_57k": 100.0,
    "get_run_ms": 3.5,
}
EXPDNA = shutil.which("expdna") or str(Path(sys.executable).with_name("expdna"))


class History:
    """Manifest ``i`` of the synthetic history; DNAs computed once per setup (2 runs)."""

    def __init__(self) -> None:
        self._dna: dict[int, Any] = {}

    def manifest(self, i: int) -> Manifest:
        setup = i // 2
        doc = synthetic_doc(
            i,
            setup=setup,
            vbios=VBIOS if setup % 100 == 0 else "96.00.5A.00.01",
            driver=DRIVERS[setup % 20],
        )
        doc["run_id"] = run_id(i)
        manifest = manifest_from_dict(doc)
        if setup not in self._dna:
            self._dna = {setup: compute_dna(manifest)}  # only the current setup is needed
        manifest.dna = self._dna[setup]
        return manifest


def run_id(i: int) -> str:
    return f"20260805_{i // 3600 % 24:02d}{i // 60 % 60:02d}{i % 60:02d}_1c8e2fb_{i:07d}"


def pin_digest(i: int) -> str:
    from expdna.digest import hex_of

    return hex_of(f"checkpoint {i}".encode())


def median_ms(fn: Callable[[Any], Any], args: list[Any]) -> float:
    fn(args[0])  # warm the statement cache and the pages
    samples = []
    for arg in args:
        start = time.perf_counter()
        fn(arg)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


class Phases:
    """Where recording time goes: wraps the store's recorder (benchmark instrumentation)."""

    def __init__(self, store: Store) -> None:
        self.seconds = {"objects": 0.0, "index": 0.0}
        recorder = store._recorder
        for name in ("put_blobs", "send_blobs", "blobs_written"):  # written here or waited
            setattr(recorder, name, self._timed("objects", getattr(recorder, name)))
        recorder.index_rows = self._timed("index", recorder.index_rows)  # type: ignore[method-assign]

    def _timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any) -> Any:
            began = time.perf_counter()
            try:
                return fn(*args)
            finally:
                self.seconds[name] += time.perf_counter() - began

        return wrapper


def record_history(store: Store, history: History, size: int) -> dict[str, float]:
    """Record ``size`` runs, CALL runs a call in batches of BATCH (manifests built outside
    the timing)."""
    phases = Phases(store)
    wall = cpu = 0.0
    helper = os.times()
    for start in range(0, size, CALL):
        batch = [history.manifest(i) for i in range(start, min(size, start + CALL))]
        began, times = time.perf_counter(), os.times()
        results = store.record_many(batch, batch_size=BATCH)
        wall += time.perf_counter() - began
        after = os.times()
        cpu += (after.user - times.user) + (after.system - times.system)
        assert all(r.status == "recorded" for r in results), results[0]
        if start and start % 100_000 == 0:
            print(f"    ... {start:,} runs", flush=True)
    ended = os.times()  # with each call's blob-writing helper, waited for when the call ends
    cpu += ended.children_user - helper.children_user
    cpu += ended.children_system - helper.children_system
    objects, index = phases.seconds["objects"], phases.seconds["index"]
    return {
        "record_runs_s": size / wall,
        "record_cpu_runs_s": size / cpu,
        "check_us": (wall - objects - index) / size * 1e6,
        "objects_us": objects / size * 1e6,
        "index_us": index / size * 1e6,
    }


def add_pins(store: Store, size: int) -> None:
    """One pinned checkpoint every PIN_EVERY runs, inserted in bulk (building the history)."""
    from sqlalchemy import insert, select

    from expdna.store.index.models import Pin, Run

    now = datetime.now(timezone.utc).replace(tzinfo=None)
    wanted = [run_id(i) for i in range(0, size, PIN_EVERY)]
    with store.index.write() as conn:
        for start in range(0, len(wanted), 5000):
            part = wanted[start : start + 5000]
            rows = conn.execute(select(Run.run_id, Run.id, Run.dna).where(Run.run_id.in_(part)))
            conn.execute(
                insert(Pin),
                [
                    {
                        "run_pk": pk,
                        "dna": dna,
                        "digest": pin_digest(int(rid[-7:])),
                        "algorithm": "blake3",
                        "name": f"ckpt-{rid}",
                        "path": None,
                        "size": 1,
                        "pinned_at": now,
                    }
                    for rid, pk, dna in rows
                ],
            )


def scan(
    store_dir: Path, index_url: str | None, start: int, count: int, history: History, scratch: Path
) -> float:
    """``expdna record --scan`` of ``count`` new manifest files; returns runs/s."""
    folder = scratch / f"scan_{start}"
    for sub in range(100):
        (folder / f"{sub:02d}").mkdir(parents=True)
    for i in range(start, start + count):
        write_manifest(history.manifest(i), folder / f"{i % 100:02d}" / f"manifest_{i}.json")
    env = {**os.environ, "EXPDNA_STORE": str(store_dir)}
    env.pop("EXPDNA_INDEX_URL", None)
    if index_url:
        env["EXPDNA_INDEX_URL"] = index_url
    began = time.perf_counter()
    done = subprocess.run(
        [EXPDNA, "record", "--scan", str(folder)], env=env, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - began
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"recorded {count}, skipped 0, failed 0"
    shutil.rmtree(folder)
    return count / elapsed


def index_bytes(store: Store) -> int:
    from sqlalchemy import text

    if store.index.dialect == "sqlite":  # pages in use, as this snapshot sees them (WAL too)
        with store.index.read() as conn:
            pages = conn.exec_driver_sql("PRAGMA page_count").scalar_one()
            free = conn.exec_driver_sql("PRAGMA freelist_count").scalar_one()
            size = conn.exec_driver_sql("PRAGMA page_size").scalar_one()
        return int((pages - free) * size)
    with store.index.read() as conn:
        conn.execute(text("ANALYZE"))
        return int(
            conn.execute(
                text(
                    "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = current_schema() AND c.relkind = 'r'"
                )
            ).scalar_one()
        )


def file_create_us(directory: Path, count: int = 2000) -> float:
    """Baseline, same run: a plain loop creating, writing and renaming 1.5 KB files in a
    fresh two-hex fan-out directory next to the store, as recording does. The files stay
    until the run ends: deleting them would slow the store's own file creation (below).

    This is the floor of every store that writes a file a run. On this VM's ext4 it swings
    from ~10 us to ~1 ms a file, all kernel CPU: creating files near many that were deleted
    minutes before is slow, and gets faster over a few minutes. A benchmark run deletes
    its stores at the end, so leave a few minutes between runs or give each a new --dir."""
    fans = [directory / f"{k:02x}" for k in range(256)]
    data = secrets.token_bytes(1500)
    began = time.perf_counter()
    for fan in fans:
        fan.mkdir(parents=True)
    for k in range(count):
        temp = fans[k % len(fans)] / f".tmp-{k}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        os.write(fd, data)
        os.close(fd)
        os.replace(temp, temp.with_name(f"{k}"))
    return (time.perf_counter() - began) / count * 1e6


def measure(
    label: str, size: int, root: Path, index_url: str | None, scan_runs: int
) -> dict[str, float]:
    history = History()
    store_dir = root / f"store_{label}_{size}"
    if index_url:
        from expdna.store.index.engine import open_index
        from expdna.store.index.migrate import upgrade

        index = open_index(store_dir, index_url)
        upgrade(index)
        index.dispose()
    with Store.open(store_dir, index_url) as store:
        print(f"  {label} {size:,} runs: recording ...", flush=True)
        create_us = file_create_us(root / f"baseline_{label}_{size}")
        recorded = record_history(store, history, size)
        scanned = scan(store_dir, index_url, size, scan_runs, history, root)
        add_pins(store, size)
        total = size + scan_runs
        rng = random.Random(7)
        picks = [rng.randrange(size) for _ in range(LOOKUPS)]
        ids = [run_id(i) for i in picks]
        pinned = [i - i % PIN_EVERY for i in picks]
        hits = len(store.find(named_filter("vbios", VBIOS)))
        result = {
            "runs": total,
            **recorded,
            "file_create_us": create_us,
            "scan_runs_s": scanned,
            "twins_ms": median_ms(store.twins, ids),
            "which_name_ms": median_ms(store.which, [f"ckpt-{run_id(i)}" for i in pinned]),
            "which_digest_ms": median_ms(store.which, [ref(pin_digest(i)) for i in pinned]),
            "vbios_ms": median_ms(lambda _: store.find(named_filter("vbios", VBIOS)), [None] * 10),
            "vbios_ids_ms": median_ms(
                lambda _: store.find_ids(named_filter("vbios", VBIOS)), [None] * 10
            ),
            "vbios_hits": hits,
            "get_ms": median_ms(store.get, ids),
            "show_ms": median_ms(store.show, ids),
            "index_bytes_run": index_bytes(store) / total,
        }
    report(label, result)
    return result


def ratio(ours: float, theirs: float, higher_is_better: bool) -> str:
    if ours <= 0:
        return "-"
    value = ours / theirs if higher_is_better else theirs / ours
    return f"{value:,.1f}x better" if value >= 1 else f"{1 / value:,.1f}x worse"


def report(label: str, r: dict[str, float]) -> None:
    at_10k = r["runs"] <= 20_000
    vbios_base = MLFLOW["vbios_ms_10k"] if at_10k else MLFLOW["vbios_ms_57k"]
    dna_base = MLFLOW["dna_tag_ms_10k"] if at_10k else MLFLOW["dna_tag_ms_57k"]
    where = "10k" if at_10k else "57k (its largest)"
    print(f"  {label}, {int(r['runs']):,} runs")
    print(
        f"    record, batched API   {r['record_runs_s']:10,.0f} runs/s  "
        f"(target >= 2,000; MLflow 54: "
        f"{ratio(r['record_runs_s'], MLFLOW['ingest_runs_s'], True)})"
    )
    print(
        f"      a run: check+flatten {r['check_us']:.0f} us, "
        f"objects (waited) {r['objects_us']:.0f} us, index {r['index_us']:.0f} us; "
        f"{r['record_cpu_runs_s']:,.0f} runs per CPU-second "
        "(with the blob-writing helper's)"
    )
    print(
        f"      baseline, just before: a plain create+write+rename of one 1.5 KB file "
        f"here took {r['file_create_us']:.0f} us"
    )
    print(
        f"    record --scan (CLI)   {r['scan_runs_s']:10,.0f} runs/s  "
        f"(MLflow 54: {ratio(r['scan_runs_s'], MLFLOW['ingest_runs_s'], True)})"
    )
    print(
        f"    twins                 {r['twins_ms']:10.2f} ms      (target < 5; MLflow dna tag at "
        f"{where} {dna_base:g} ms: {ratio(r['twins_ms'], dna_base, False)})"
    )
    print(f"    which NAME            {r['which_name_ms']:10.2f} ms      (target < 5)")
    print(f"    which blake3:DIGEST   {r['which_digest_ms']:10.2f} ms      (target < 5)")
    print(
        f"    find --vbios          {r['vbios_ms']:10.2f} ms      ({int(r['vbios_hits']):,} "
        f"runs; target < 100; MLflow at {where} {vbios_base:g} ms: "
        f"{ratio(r['vbios_ms'], vbios_base, False)})"
    )
    print(
        f"    find_ids --vbios      {r['vbios_ids_ms']:10.2f} ms      (run ids and DNA only; "
        f"MLflow: {ratio(r['vbios_ids_ms'], vbios_base, False)})"
    )
    print(
        f"    get (show summary)    {r['get_ms']:10.2f} ms      (target < 5; MLflow get_run "
        f"3.5 ms: {ratio(r['get_ms'], MLFLOW['get_run_ms'], False)})"
    )
    print(f"    show (manifest)       {r['show_ms']:10.2f} ms")
    print(
        f"    index                 {r['index_bytes_run']:10,.0f} B/run  (target <= 4,096; "
        f"MLflow 19.3 KB: {ratio(r['index_bytes_run'], MLFLOW['bytes_per_run'], False)})",
        flush=True,
    )


def growth(results: list[dict[str, float]]) -> None:
    """How latency grew from the smallest to the largest history (linear = the size ratio)."""
    if len(results) < 2:
        return
    small, large = results[0], results[-1]
    print(
        f"  growth {int(small['runs']):,} -> {int(large['runs']):,} runs "
        f"({large['runs'] / small['runs']:.0f}x the history):"
    )
    for key in ("twins_ms", "which_name_ms", "which_digest_ms", "get_ms", "show_ms"):
        print(f"    {key:<16} {large[key] / small[key]:5.2f}x")
    hits = large["vbios_hits"] / small["vbios_hits"]
    for key in ("vbios_ms", "vbios_ids_ms"):
        print(
            f"    {key:<16} {large[key] / small[key]:5.2f}x "
            f"(with {hits:.0f}x the hits: it returns 1 % of the history)"
        )


def pg_database(url: str) -> Iterator[str]:
    import psycopg
    from sqlalchemy.engine import make_url

    base = make_url(url)
    admin = psycopg.connect(
        host=base.host,
        port=base.port or 5432,
        user=base.username,
        dbname=base.database or "postgres",
        autocommit=True,
    )
    name = f"expdna_bench_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default="10000,100000",
        help="history sizes on SQLite, comma-separated (1000000: ~15 min)",
    )
    parser.add_argument("--postgres", action="store_true", help="add 100,000 runs on PostgreSQL")
    parser.add_argument("--pg-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--pg-size", type=int, default=100_000)
    parser.add_argument(
        "--scan-runs",
        type=int,
        default=5000,
        help="manifest files recorded through `expdna record --scan`",
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the stores are built")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="expdna-store-bench-", dir=args.dir))
    print(f"stores under {root} (CPU: {os.cpu_count()} cores)")
    try:
        results = [
            measure("SQLite", int(size), root, None, args.scan_runs)
            for size in args.sizes.split(",")
        ]
        growth(results)
        if args.postgres:
            for url in pg_database(args.pg_url):
                measure("PostgreSQL", args.pg_size, root, url, args.scan_runs)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
