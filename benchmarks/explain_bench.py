"""``expdna explain`` at scale: one setup of S runs with ~300 varying fields inside a store of
N runs, the whole command's time next to a plain ``runs --where`` over the same runs.

    python benchmarks/explain_bench.py [--total 1000000] [--setup 10000] [--repeat 3]
    python benchmarks/explain_bench.py --total 100000 --total 300000 --total 1000000

The store: S runs of one setup whose machines differ in VBIOS, driver, NCCL, host and 290
package versions (each of three versions at random), recorded through
``Store.record_many``; one planted cause, the loss is higher on one VBIOS. Then N - S
other runs: :data:`TEMPLATES` runs of tests/history.py recorded the same way, and copies of
their index rows (``runs`` with a new run id, and their fact-set links, own facts,
metrics and blob references) made in SQL until the index holds N runs. Recording runs one
by one costs ~10 ms each (1M: ~3 hours on 2 cores); the copies took 38 s for the first
100,000 runs and 22 minutes for 1M on this loaded machine (the b-trees grow deeper).
A copy shares its template's manifest object, DNA and setup (a rerun), so the copies are
index rows only: what the two commands read, and what the index's size and its b-trees'
depth come from. Stores are cached under ``/tmp/expdna-explain-bench/`` keyed by
:data:`BUILD`, the index revision and the sizes; ``--rebuild`` drops the cache.

Timed: ``expdna explain --metric final_loss --same-setup RUN --json`` and ``expdna runs
--where training.algorithm=explain-bench --limit 0 --json`` (the same S runs) as
processes, wall and CPU seconds (median of --repeat); and, in process, the two halves of
explain: reading the fleet (index) and the statistics.

Target (issue "Explain a metric across the fleet"): S = 10,000 in N = 1M with 300 varying
fields, < 2 s whole command.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.factories import synthetic_doc
from tests.history import history

from expdna.explain.outcome import asked
from expdna.manifest.dna import compute_dna
from expdna.manifest.io import manifest_from_dict
from expdna.manifest.model import Manifest
from expdna.store import Store

SETUP = 424242
PACKAGES = 290
ALGORITHM = "explain-bench"


def setup_runs(count: int, start: int, first: int) -> Iterator[Manifest]:
    """Runs ``first`` .. ``first + count - 1`` of the setup (manifest numbers from ``start``)."""
    rng = random.Random(28 + first)
    for j in range(count):
        i, k = start + j, first + j
        doc: dict[str, Any] = synthetic_doc(i, setup=SETUP)
        doc["run_id"] = f"20261201_{k // 3600 % 24:02d}{k // 60 % 60:02d}{k % 60:02d}_bench_{k:07d}"
        doc["config"]["resolved_args"]["seed"] = k % 50
        doc["training"]["seeds"] = {"seed": k % 50}
        doc["training"]["algorithm"] = ALGORITHM
        # the algorithm is chosen on the command line, as a real script's is: the v3 setup
        # counts the command, not the training section derived from it, so without this the
        # setup is also that of the filler runs with the same commit (19,900 runs, not 10,000)
        doc["command"]["argv"] += ["--algorithm", ALGORITHM]
        on_09 = rng.random() < 0.2
        hw = doc["hardware"]
        for gpu in hw["gpus"]:
            gpu["vbios_version"] = "94.00.00.00.09" if on_09 else "94.00.00.00.08"
        hw["driver_version"] = rng.choice(["535.104.05", "550.54.15", "550.90.07"])
        hw["nccl_version"] = rng.choice(["2.21.5", "2.23.4"])
        hw["hostname"] = f"node-{rng.randrange(40):02d}"
        packages = doc["environment"]["packages"]
        for p in range(PACKAGES):
            packages[f"pkg-{p:03d}"] = f"1.{rng.randrange(3)}.0"
        doc["metrics"] = {"final_loss": 2.0 + rng.gauss(0, 0.05) + (0.2 if on_09 else 0.0)}
        manifest = manifest_from_dict(doc)
        manifest.dna = compute_dna(manifest)
        yield manifest


#: Bump when the stores built here change; cached stores of another build are not reused.
BUILD = 3
#: Filler runs recorded through the store; the rest of the N - S are copies of them.
TEMPLATES = 2_000
CACHE = Path(tempfile.gettempdir()) / "expdna-explain-bench"
#: ``runs`` columns copied as they are (the id and run id are new).
_RUN_COLUMNS = (
    "dna, dna_version, code_digest, config_digest, training_digest, environment_digest, "
    "hardware_digest, runtime_digest, data_digest, manifest_blob_id, schema_version, "
    'generated_at, recorded_at, "commit", algorithm, gpu_model, driver_version, '
    "cuda_version, nccl_version, python_version, family, unknown, setup, state"
)


def record(root: Path, size: int, templates: int) -> str:
    """A store of the setup's ``size`` runs and ``templates`` other runs, recorded; returns
    the setup's first run id."""
    store = Store.open(root)
    first = None
    try:
        for start in range(0, size, 5_000):
            batch = list(setup_runs(min(5_000, size - start), templates + start, start))
            first = first or batch[0].run_id
            results = store.record_many(batch)
            assert all(r.status == "recorded" for r in results), results[0]
        for start in range(0, templates, 5_000):
            store.record_many(history(min(5_000, templates - start), start=start))
    finally:
        store.close()
    assert first is not None
    return first


def copy_rows(database: Path, total: int) -> None:
    """Copy the template runs' index rows until ``database`` holds ``total`` runs."""
    conn = sqlite3.connect(database)
    try:
        low, have = conn.execute(
            "SELECT min(id), count(*) FROM runs WHERE algorithm IS NOT ?", (ALGORITHM,)
        ).fetchone()
        span = int(conn.execute("SELECT max(id) FROM runs").fetchone()[0])
        copy = 0
        count = int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])
        while count < total:
            copy += 1
            offset = copy * span
            take = min(have, total - count)
            top = low + take - 1
            with conn:
                conn.execute(
                    f"INSERT INTO runs (id, run_id, {_RUN_COLUMNS}) SELECT id + ?, "
                    f"run_id || printf('-copy%04d', ?), {_RUN_COLUMNS} FROM runs "
                    "WHERE id BETWEEN ? AND ?",
                    (offset, copy, low, top),
                )
                for table, column, other in (
                    ("run_fact_sets", "run_pk", "set_id"),
                    ("facts", "run_pk", "value_id"),
                    ("run_blobs", "run_pk", "blob_id"),
                ):
                    conn.execute(
                        f"INSERT INTO {table} ({column}, {other}) SELECT {column} + ?, {other} "
                        f"FROM {table} WHERE {column} BETWEEN ? AND ?",
                        (offset, low, top),
                    )
                conn.execute(
                    "INSERT INTO metrics (run_pk, name, value) SELECT run_pk + ?, name, value "
                    "FROM metrics WHERE run_pk BETWEEN ? AND ?",
                    (offset, low, top),
                )
            count += take
        conn.execute("ANALYZE")
    finally:
        conn.close()


def build(total: int, size: int, rebuild: bool) -> tuple[Path, str]:
    """The cached store of ``total`` runs (``size`` in the setup), built if absent."""
    from expdna.store.index.revision import HEAD

    key = CACHE / f"build{BUILD}-{HEAD}-{size}"
    root = key / f"total-{total}"
    recorded = key / "recorded"
    if rebuild:
        shutil.rmtree(key, ignore_errors=True)
    if not (root / "first").exists():
        began = time.perf_counter()
        if not (recorded / "first").exists():
            shutil.rmtree(recorded, ignore_errors=True)
            templates = min(TEMPLATES, max(total - size, 0))
            first = record(recorded / "store", size, templates)
            (recorded / "first").write_text(first)
            print(f"recorded {size + templates:,} runs in {time.perf_counter() - began:.0f} s")
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(recorded / "store", root / "store")
        began = time.perf_counter()
        copy_rows(root / "store" / "index.sqlite", total)
        print(f"copied index rows up to {total:,} runs in {time.perf_counter() - began:.0f} s")
        shutil.copy(recorded / "first", root / "first")
    return root / "store", (root / "first").read_text()


def timed(root: Path, args: list[str], repeat: int) -> tuple[float, float, int]:
    """Median wall and CPU seconds of ``expdna ARGS`` as a process, and its output size."""
    env = {**os.environ, "EXPDNA_STORE": str(root)}
    env.pop("EXPDNA_INDEX_URL", None)
    expdna = str(Path(sys.executable).with_name("expdna"))
    walls, cpus, size = [], [], 0
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        done = subprocess.run([expdna, *args], capture_output=True, env=env, check=False)
        walls.append(time.perf_counter() - began)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        assert done.returncode == 0, done.stderr[-500:]
        size = len(done.stdout)
    return statistics.median(walls), statistics.median(cpus), size


def halves(root: Path, ref: str, size: int) -> None:
    from expdna.explain.report import explain
    from expdna.store.explain import read_fleet, setup_runs

    store = Store.open_for_reading(root)
    try:
        began = time.perf_counter()
        outcome = asked("final_loss", None, None, None)
        fleet = read_fleet(store, setup=setup_runs(store, ref), metric="final_loss")
        read = time.perf_counter() - began
        began = time.perf_counter()
        report = explain(len(fleet.runs), outcome.outcome, fleet.outcome, fleet.fields)
        tested = time.perf_counter() - began
    finally:
        store.close()
    # the figures are for one setup of ``size`` runs, its cause found: a selection that took
    # in other runs (the filler's setups are the same code and command) measures another load
    assert len(fleet.runs) == size, f"the setup selected {len(fleet.runs):,} runs, not {size:,}"
    assert report.findings[0].fields[0] == "hardware.gpus.vbios_version", report.findings[0]
    varying = len(report.findings) + len(report.too_few) + len(report.per_run)
    print(
        f"in process: read {len(fleet.runs):,} runs, {len(fleet.fields)} fields "
        f"({varying} varying, {len(report.findings)} findings) {read:.2f} s; "
        f"statistics {tested:.2f} s"
    )
    print(f"top: {report.findings[0].fields[0]} adjusted p {report.findings[0].q:.2g}")


def measure(root: Path, ref: str, size: int, repeat: int) -> None:
    with sqlite3.connect(root / "index.sqlite") as conn:
        count = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
    index_bytes = (root / "index.sqlite").stat().st_size
    print(f"store: {count:,} runs, index {index_bytes / 2**20:,.0f} MiB")
    halves(root, ref, size)
    explain_args = ["explain", "--metric", "final_loss", "--same-setup", ref, "--json"]
    runs_args = ["runs", "--where", f"training.algorithm={ALGORITHM}", "--limit", "0", "--json"]
    rows = []
    for name, args in (("explain", explain_args), ("runs --where", runs_args)):
        wall, cpu, out = timed(root, args, repeat)
        rows.append((name, wall, cpu, out))
        print(f"{name:<14} wall {wall:6.2f} s  cpu {cpu:6.2f} s  output {out / 1024:,.0f} KB")
    print(
        f"ratio explain / runs --where: wall {rows[0][1] / rows[1][1]:.1f}x, "
        f"cpu {rows[0][2] / rows[1][2]:.1f}x; load average {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} cores"
    )


def main() -> None:
    from expdna.explain import load_numpy

    load_numpy()  # as the command loads it (one BLAS thread), so the halves are its halves
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", type=int, action="append", help="runs in the store")
    parser.add_argument("--setup", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rebuild", action="store_true", help="drop the cached stores")
    options = parser.parse_args()
    for total in options.total or [1_000_000]:
        root, ref = build(total, options.setup, options.rebuild)
        measure(root, ref, options.setup, options.repeat)


if __name__ == "__main__":
    main()
