"""What the training hook adds to a training start, next to ``ray.init`` itself.

Measured the way a training script runs: torch imported, ``expdna.start()`` before
``ray.init``, ``add_runtime()`` after it (the first call, cold), then warm repeats of both
with Ray up. Once on a one-node local Ray, once on a real two-node
``ray.cluster_utils.Cluster`` on this machine, where the first ``add_runtime()`` includes
starting the worker node's probe task (a fresh Ray worker process).

    python benchmarks/hook_bench.py [--repeat 5] [--skip-cluster] [--project DIR]
                                    [--store-only] [--pg-url URL]

The training project is a fresh git repository holding a small training script with an
uncommitted edit (a typical checkout); ``--project DIR`` measures a real one instead (its
``train.py``, or any file in it, stands for the script).

Targets (issue "Training integration"): under 150 ms on one node, under 1 s for the
two-node fingerprint including the per-node tasks' first start. Figures move on a shared
machine: compare the ratios to ``ray.init``, measured in the same run.

With a store (issue "The store"): the same training start (``start`` + ``add_runtime`` +
``finish``) in fresh interpreters, torch and expdna imported first, without a store, with a
local SQLite store and with a shared PostgreSQL index (a throwaway database on the server
of ``--pg-url``, default ``$EXPDNA_BENCH_PG_URL``, else the local server, when it answers).
Target: a store adds at most 100 ms. ``--store-only`` measures only this.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.pop("EXPDNA_STORE", None)

import ray
import torch

import expdna

#: The training script the hook finds its project from (set in main).
SCRIPT: list[Path | None] = [None]
ONE_NODE_TARGET_MS = 150.0
TWO_NODE_TARGET_MS = 1000.0
STORE_ADDED_TARGET_MS = 100.0
DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"

#: One training start in a fresh interpreter: the hook's three calls, timed; what it loaded.
TRAINING_START = """
import json, sys, tempfile, time
import torch
import expdna
out = tempfile.mkdtemp()
began = time.perf_counter()
handle = expdna.start({"lr": 0.1}, output_dir=out, caller_file=sys.argv[1])
handle.add_runtime()
handle.finish(metrics={"loss": 0.5})
elapsed = (time.perf_counter() - began) * 1000
heavy = sorted(m for m in ("sqlalchemy", "alembic") if m in sys.modules)
print(json.dumps({"ms": elapsed, "heavy": heavy, "warnings": handle.warnings}))
"""


TRAIN_PY = (
    "\n".join(
        [
            "import argparse",
            "import torch",
            "",
            "def main() -> None:",
            "    parser = argparse.ArgumentParser()",
            "    parser.add_argument('--lr', type=float, default=0.1)",
            "    args = parser.parse_args()",
        ]
        + [
            f"    layer_{i} = torch.nn.Linear({i + 1}, {i + 2})  # model part {i}"
            for i in range(80)
        ]
    )
    + "\n"
)


def typical_project(root: Path) -> Path:
    """A git repository with one training script, committed, then edited (dirty)."""
    repo = root / "project"
    repo.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@example.com",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@example.com",
    }
    script = repo / "train.py"
    script.write_text(TRAIN_PY)
    for argv in (["init", "-q"], ["add", "train.py"], ["commit", "-q", "-m", "train"]):
        subprocess.run(["git", "-C", str(repo), *argv], env=env, check=True)
    script.write_text(TRAIN_PY.replace("default=0.1", "default=0.05"))
    return script


def ms(fn: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    result = fn()
    return (time.perf_counter() - began) * 1000, result


def begin(output_dir: Path) -> Any:
    return expdna.start({"lr": 0.1}, output_dir=output_dir, caller_file=SCRIPT[0])


def hook(output_dir: Path) -> tuple[float, float]:
    start_ms, handle = ms(lambda: begin(output_dir))
    assert handle is not None
    runtime_ms, _ = ms(handle.add_runtime)
    if handle.warnings:
        print(f"  warnings: {handle.warnings}")
    return start_ms, runtime_ms


def measure(name: str, init: Callable[[], Any], repeat: int, target_ms: float) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        start_ms, handle = ms(lambda: begin(out))
        assert handle is not None
        init_ms, _ = ms(init)
        runtime_ms, _ = ms(handle.add_runtime)
        assert handle.manifest is not None
        mode = handle.manifest.runtime.mode
        count = handle.manifest.runtime.node_count
        prints = sum(
            1 for n in handle.manifest.runtime.nodes if (n.model_extra or {}).get("fingerprint")
        )
        if handle.warnings:
            print(f"  warnings: {handle.warnings}")
        warm = [hook(out) for _ in range(repeat)]
    cold = start_ms + runtime_ms
    warm_total = statistics.median(s + r for s, r in warm)
    ok = cold < target_ms
    print(f"{name}: {mode}, {count} node(s), {prints} fingerprint(s)")
    print(f"  ray.init                         {init_ms:9.1f} ms")
    print(f"  start() before ray.init          {start_ms:9.1f} ms")
    print(f"  add_runtime() after it (cold)    {runtime_ms:9.1f} ms")
    print(
        f"  hook total, cold                 {cold:9.1f} ms  = {cold / init_ms:6.1%} of ray.init"
        f"   target < {target_ms:.0f} ms: {'ok' if ok else 'MISSED'}"
    )
    print(
        f"  hook total, warm (median of {repeat})  {warm_total:9.1f} ms"
        f"  (start {statistics.median(s for s, _ in warm):.1f}"
        f" + add_runtime {statistics.median(r for _, r in warm):.1f})"
    )
    return ok


def _training_start(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", TRAINING_START, str(SCRIPT[0])],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def _bare_ms() -> float:
    """Wall time of a bare interpreter, ``python -c pass``: the baseline of the ratios."""
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, timeout=60)
    return (time.perf_counter() - began) * 1000


@contextlib.contextmanager
def _pg_database(given: str | None) -> Iterator[str | None]:
    """A throwaway database on the server of ``given`` (never the database it names: a
    store binds its index), dropped at the end; None when no server answers."""
    import secrets

    url = given or os.environ.get("EXPDNA_BENCH_PG_URL") or DEFAULT_PG_URL
    try:
        import psycopg
        from sqlalchemy.engine import make_url

        base = make_url(url)
        admin = psycopg.connect(
            host=base.host,
            port=base.port or 5432,
            user=base.username,
            dbname=base.database or "postgres",
            autocommit=True,
            connect_timeout=2,
        )
    except Exception as exc:  # no server here: that row is left out, saying why
        print(f"  (no PostgreSQL server at {url}: {type(exc).__name__}; row left out)")
        yield None
        return
    name = f"expdna_hookbench_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def store_start(repeat: int, pg_url: str | None) -> bool:
    """The training start without a store, with a local SQLite one, with PostgreSQL."""
    from expdna.store import Store

    base = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    with tempfile.TemporaryDirectory() as tmp, _pg_database(pg_url) as url:
        configs: dict[str, dict[str, str]] = {"no store": base}
        local = Path(tmp) / "local"
        Store.open(local).close()  # an existing store, as a team's is
        configs["local SQLite store"] = {**base, "EXPDNA_STORE": str(local)}
        if url is not None:
            shared = Path(tmp) / "shared"
            Store.open(shared, url, upgrade=True).close()
            configs["shared PostgreSQL index"] = {
                **base,
                "EXPDNA_STORE": str(shared),
                "EXPDNA_INDEX_URL": url,
            }
        figures: dict[str, float] = {}
        # round-robin: each round runs every configuration (and the bare interpreter) once,
        # so a busy minute on a shared machine costs them all alike
        rounds: list[dict[str, dict[str, Any]]] = []
        bares: list[float] = []
        for _ in range(repeat):
            rounds.append({name: _training_start(env) for name, env in configs.items()})
            bares.append(_bare_ms())
        bare = statistics.median(bares)
        print(f"  {'bare interpreter':<24} {bare:8.1f} ms  (python -c pass, median of {repeat})")
        for name in configs:
            runs = [measured[name] for measured in rounds]
            figures[name] = statistics.median(r["ms"] for r in runs)
            heavy = sorted({m for r in runs for m in r["heavy"]})
            warned = [w for r in runs for w in r["warnings"]]
            print(
                f"  {name:<24} {figures[name]:8.1f} ms  {figures[name] / bare:5.1f}x bare "
                f"(start + add_runtime + finish, median of {repeat}; loaded "
                f"{', '.join(heavy) or 'no SQLAlchemy/alembic'})"
            )
            if warned:
                print(f"    warnings: {warned[:2]}")
    ok = True
    for name, value in figures.items():
        if name == "no store":
            continue
        added = value - figures["no store"]
        met = added <= STORE_ADDED_TARGET_MS
        ok &= met
        print(
            f"  added by a {name}: {added:+.1f} ms   target <= {STORE_ADDED_TARGET_MS:.0f} ms: "
            f"{'ok' if met else 'MISSED'}"
        )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-cluster", action="store_true")
    parser.add_argument("--project", type=Path, help="measure in this checkout instead")
    parser.add_argument("--store-only", action="store_true", help="only the with-store start")
    parser.add_argument("--pg-url", help="the shared PostgreSQL index to measure with")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        if args.project is None:
            SCRIPT[0] = typical_project(Path(tmp))
        else:
            found = args.project.resolve() / "train.py"
            SCRIPT[0] = found if found.exists() else next(args.project.resolve().iterdir())
        assert SCRIPT[0] is not None
        os.chdir(SCRIPT[0].parent)
        print(
            f"python {sys.version.split()[0]}, ray {ray.__version__}, "
            f"torch {torch.__version__}, {os.cpu_count()} CPUs, project {SCRIPT[0].parent}"
        )
        return run(args)


@contextlib.contextmanager
def two_nodes() -> Iterator[Any]:
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def _noop() -> None:
    return None


def ray_first_task_ms() -> float:
    """Ray's own cost: the first no-op task pinned to the worker node of a fresh cluster."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    with two_nodes() as cluster:
        ray.init(address=cluster.address, log_to_driver=False)
        worker = next(n for n in cluster.list_all_nodes() if not n.head)
        task = ray.remote(num_cpus=0)(_noop).options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=worker.node_id, soft=False)
        )
        elapsed, _ = ms(lambda: ray.get(task.remote()))
    return elapsed


def run(args: argparse.Namespace) -> int:
    results = []
    print("training start with a store (fresh interpreters):")
    results.append(store_start(args.repeat, args.pg_url))
    if args.store_only:
        return 0 if all(results) else 1
    try:
        results.append(
            measure(
                # address="local": a fresh instance, even if another Ray runs on this machine
                "one node",
                lambda: ray.init(
                    address="local", num_cpus=1, include_dashboard=False, log_to_driver=False
                ),
                args.repeat,
                ONE_NODE_TARGET_MS,
            )
        )
    finally:
        ray.shutdown()
    if not args.skip_cluster:
        with two_nodes() as cluster:
            results.append(
                measure(
                    "two nodes (Cluster)",
                    lambda: ray.init(address=cluster.address, log_to_driver=False),
                    args.repeat,
                    TWO_NODE_TARGET_MS,
                )
            )
        baseline = ray_first_task_ms()
        print(
            f"  baseline: Ray's first no-op task on a fresh worker node {baseline:9.1f} ms"
            " (another fresh cluster; the cold add_runtime above includes this)"
        )
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
