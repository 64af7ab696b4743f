"""The store as the source of truth: what the log costs recording, and how fast ``reindex``
rebuilds a lost index.

Records a synthetic history (store_bench's: ~80 leaves a manifest, every DNA shared by 2
runs) through ``Store.record_many``, plus a pin and a metrics update every PIN_EVERY runs
(through the log, as ``expdna pin`` and the training hook write them); prints record
throughput and SQLite index bytes per run; then deletes the index and times ``reindex``,
and checks the rebuilt index holds every run, pin and metric.

``--baseline-src DIR`` records the same history with the expdna in ``DIR/src`` (a
checkout of the commit before the log, e.g. ``git worktree add /tmp/base main``) in a
subprocess of this script, in the same run, and prints the ratio.

    python benchmarks/reindex_bench.py [--runs 100000] [--record-runs 20000] [--rounds 3]
                                       [--baseline-src DIR] [--skip-reindex] [--dir DIR]

Targets (issue "The store never loses or lies"): reindex of 100,000 runs < 60 s;
batched record >= 2,000 runs/s with the log; SQLite index <= 2 KB a run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from store_bench import BATCH, CALL, History, index_bytes, pin_digest, run_id

from expdna.store import SQLITE_NAME, Store

PIN_EVERY = 100
_CPU = ("user", "system", "children_user", "children_system")


def record(root: Path, size: int) -> tuple[float, float]:
    """Record ``size`` runs; returns runs/s (manifests built outside the timing) and SQLite
    index bytes a run."""
    history = History()
    wall = 0.0
    with Store.open(root) as store:
        for start in range(0, size, CALL):
            batch = [history.manifest(i) for i in range(start, min(size, start + CALL))]
            began = time.perf_counter()
            results = store.record_many(batch, batch_size=BATCH)
            wall += time.perf_counter() - began
            assert all(r.status == "recorded" for r in results), results[0]
        per_run = index_bytes(store) / size
    return size / wall, per_run


def facts(root: Path, size: int) -> None:
    """A pin and a metrics update every PIN_EVERY runs, each through the log."""
    with Store.open(root) as store:
        for i in range(0, size, PIN_EVERY):
            store.pin(run_id=run_id(i), digest=pin_digest(i), name=f"ckpt-{i}.pt", size=i)
            store.record_metrics(run_id(i), {"eval": {"accuracy": i / size}})


def rebuilt(root: Path, size: int) -> dict[str, float]:
    from expdna.store.config import StoreConfig
    from expdna.store.reindex import reindex

    (root / SQLITE_NAME).unlink()
    for leftover in root.glob(SQLITE_NAME + "-*"):
        leftover.unlink()
    began, times = time.perf_counter(), os.times()
    report = reindex(StoreConfig.resolve(root))
    seconds = time.perf_counter() - began
    ended = os.times()  # this process and its preparing workers
    cpu = sum(getattr(ended, f) - getattr(times, f) for f in _CPU)
    assert report.ok, report.problems[:3]
    with Store.open(root) as store:
        assert len(store.runs(limit=size + 1)) == size
        probe = size // PIN_EVERY // 2 * PIN_EVERY
        assert [p.run_id for p in store.which(f"ckpt-{probe}.pt")] == [run_id(probe)]
        assert store.metrics(run_id(probe))["eval.accuracy"] == probe / size
        assert store.fsck().ok
    return {"reindex_s": seconds, "reindex_runs_s": size / seconds, "reindex_cpu_s": cpu}


def baseline(source: Path, size: int, directory: Path) -> tuple[float, float]:
    """Record throughput of the expdna in ``source`` (a subprocess of this script)."""
    env = {**os.environ, "PYTHONPATH": f"{source / 'src'}{os.pathsep}{source}"}
    done = subprocess.run(
        [sys.executable, __file__, "--only-record", str(size), "--dir", str(directory)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=source,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return float(found["record_runs_s"]), float(found["bytes_per_run"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100_000, help="runs to reindex")
    parser.add_argument("--record-runs", type=int, default=20_000, help="runs for record speed")
    parser.add_argument("--baseline-src", type=Path, help="a checkout to compare with")
    parser.add_argument("--dir", type=Path, help="where stores go (default: a temp dir)")
    parser.add_argument("--rounds", type=int, default=3, help="record turns (ours, baseline)")
    parser.add_argument("--skip-reindex", action="store_true", help="record speed only")
    parser.add_argument("--only-record", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    parent = Path(tempfile.mkdtemp(prefix="expdna-reindex-", dir=args.dir))
    try:
        if args.only_record:
            import expdna

            print(f"expdna from {Path(expdna.__file__).parent}", file=sys.stderr)
            speed, per_run = record(parent / "s", args.only_record)
            print(json.dumps({"record_runs_s": speed, "bytes_per_run": per_run}))
            return
        import expdna

        print(f"expdna from {Path(expdna.__file__).parent}")
        # Ours and the baseline in turn, so a busy machine slows both alike; medians.
        ours_runs: list[float] = []
        theirs_runs: list[float] = []
        for turn in range(args.rounds):
            speed, our_bytes = record(parent / f"record{turn}", args.record_runs)
            ours_runs.append(speed)
            shutil.rmtree(parent / f"record{turn}")
            if args.baseline_src:
                speed, their_bytes = baseline(args.baseline_src, args.record_runs, parent)
                theirs_runs.append(speed)
        ours = statistics.median(ours_runs)
        print(
            f"record_many, {args.record_runs:,} runs:   {ours:8.0f} runs/s (target >= 2000), "
            f"index {our_bytes:.0f} bytes a run; each turn: "
            + ", ".join(f"{v:.0f}" for v in ours_runs)
        )
        if args.baseline_src:
            theirs = statistics.median(theirs_runs)
            print(
                f"  baseline {args.baseline_src}: {theirs:8.0f} runs/s, index "
                f"{their_bytes:.0f} bytes a run; each turn: "
                + ", ".join(f"{v:.0f}" for v in theirs_runs)
            )
            print(
                f"  with the log: {ours / theirs:.2f}x the speed, "
                f"{our_bytes / their_bytes:.3f}x the index bytes"
            )
        if args.skip_reindex:
            return
        root = parent / "history"
        began = time.perf_counter()
        speed, _ = record(root, args.runs)
        facts(root, args.runs)
        print(
            f"history, {args.runs:,} runs + {2 * args.runs // PIN_EVERY:,} pins/metrics: "
            f"recorded at {speed:.0f} runs/s ({time.perf_counter() - began:.0f} s with facts)"
        )
        with Store.open(root) as store:
            per_run = index_bytes(store) / args.runs
        print(f"SQLite index:         {per_run:8.0f} bytes a run (target <= 2048)")
        entries = len(list((root / "objects" / "log").iterdir()))
        print(f"log entries:          {entries:8d}")
        result = rebuilt(root, args.runs)
        print(
            f"reindex, {args.runs:,} runs: {result['reindex_s']:8.1f} s "
            f"({result['reindex_runs_s']:.0f} runs/s; target < 60 s), "
            f"{result['reindex_cpu_s']:.1f} s of CPU; load average {os.getloadavg()[0]:.1f} "
            f"on {os.cpu_count()} cores"
        )
    finally:
        shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    main()
