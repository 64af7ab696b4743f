"""``expdna explain`` at scale: one setup of S runs with ~300 varying fields inside a store of
N runs, the whole command's time next to a plain ``runs --where`` over the same runs.

    python benchmarks/explain_bench.py [--total 100000] [--setup 10000] [--dir DIR] [--keep]

The store: N - S runs of tests/history.py (other setups) and S runs of one setup whose
machines differ in VBIOS, driver, NCCL, host and 290 package versions (each of three
versions at random), recorded through ``Store.record_many``. One planted cause: the loss
is higher on one VBIOS. Timed: ``expdna explain --metric final_loss --same-setup RUN
--json`` and ``expdna runs --where training.algorithm=explain-bench --limit 0 --json``
(the same S runs) as processes, wall and CPU seconds (median of --repeat); and, in
process, the two halves of explain: reading the fleet (index + manifests) and the
statistics.

Target (issue "Explain a metric across the fleet"): S = 10,000 in N = 1M with 300 varying
fields, < 2 s whole command. Building 1M runs takes ~15 minutes on 2 idle cores
(store_bench.py), so N defaults to 100,000; the selection is one indexed lookup
(``ix_runs_setup``) and the rest reads only the S runs, so N changes little.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
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


def build(root: Path, total: int, size: int) -> str:
    store = Store.open(root)
    began = time.perf_counter()
    recorded = 0
    try:
        rest = total - size
        for start in range(0, rest, 10_000):
            store.record_many(history(min(10_000, rest - start), start=start))
        first = None
        for start in range(0, size, 5_000):
            batch = list(setup_runs(min(5_000, size - start), rest + start, start))
            first = first or batch[0].run_id
            results = store.record_many(batch)
            recorded += sum(r.status == "recorded" for r in results)
    finally:
        store.close()
    print(f"built {total:,} runs ({size:,} in the setup) in {time.perf_counter() - began:.0f} s")
    assert first is not None and recorded == size, recorded
    return first


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


def halves(root: Path, ref: str) -> None:
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
    varying = len(report.findings) + len(report.too_few) + len(report.per_run)
    print(
        f"in process: read {len(fleet.runs):,} runs, {len(fleet.fields)} fields "
        f"({varying} varying, {len(report.findings)} findings) {read:.2f} s; "
        f"statistics {tested:.2f} s"
    )
    print(f"top: {report.findings[0].fields[0]} adjusted p {report.findings[0].q:.2g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", type=int, default=100_000)
    parser.add_argument("--setup", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    options = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="explain-bench-", dir=options.dir))
    root = base / "store"
    try:
        ref = build(root, options.total, options.setup)
        halves(root, ref)
        explain_args = ["explain", "--metric", "final_loss", "--same-setup", ref, "--json"]
        runs_args = ["runs", "--where", f"training.algorithm={ALGORITHM}", "--limit", "0", "--json"]
        rows = []
        for name, args in (("explain", explain_args), ("runs --where", runs_args)):
            wall, cpu, size = timed(root, args, options.repeat)
            rows.append((name, wall, cpu, size))
            print(f"{name:<14} wall {wall:6.2f} s  cpu {cpu:6.2f} s  output {size / 1024:,.0f} KB")
        print(f"ratio explain / runs --where: wall {rows[0][1] / rows[1][1]:.1f}x")
    finally:
        if options.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
