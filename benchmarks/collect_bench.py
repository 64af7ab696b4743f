"""The default collection (``expdna.collect()``): per collector and in total, next to
PyTorch's own ``python -m torch.utils.collect_env`` measured in the same run.

Three ways, each in its own process so nothing is shared with this script:

- fresh: ``import expdna; expdna.collect()`` in a new interpreter, ``--runs`` times;
- in-process: a process that has already imported torch (and ray, when importable), as a
  training script has, calling ``expdna.collect()`` ``--runs`` times (the first call is
  included in the max);
- the whole ``expdna generate`` command, wall clock, against ``collect_env``'s.

    python benchmarks/collect_bench.py [--runs 10] [--project DIR]

The project is a fresh git repository with a training script and an uncommitted edit (a
typical checkout); ``--project DIR`` measures a real one. Targets (issue "Collectors",
Speed; 2 cores, no GPU): in-process median <= 100 ms and max <= 250 ms; the whole
``expdna generate`` process <= 0.3x ``collect_env``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FRESH = """
import json, time
t0 = time.perf_counter()
import expdna
t1 = time.perf_counter()
m = expdna.collect()
t2 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "call_ms": (t2 - t1) * 1e3,
                  "total_ms": m.collection.duration_ms,
                  "collectors": {n: [s.duration_ms, s.status]
                                 for n, s in m.collection.collectors.items()}}))
"""

LOADED = """
import json, sys, time
import torch
try:
    import ray
except ImportError:
    ray = None
import expdna
runs = []
for _ in range(int(sys.argv[1])):
    t0 = time.perf_counter()
    m = expdna.collect()
    runs.append({"call_ms": (time.perf_counter() - t0) * 1e3,
                 "total_ms": m.collection.duration_ms,
                 "collectors": {n: [s.duration_ms, s.status]
                                for n, s in m.collection.collectors.items()}})
print(json.dumps({"ray": ray is not None, "runs": runs}))
"""


def make_project(directory: Path) -> Path:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@example.com",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@example.com",
    }

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=directory, env=env, check=True, capture_output=True)

    directory.mkdir()
    git("init", "-q", "-b", "main")
    (directory / "train.py").write_text("import torch\nprint('train')\n")
    git("add", "train.py")
    git("commit", "-q", "-m", "first")
    (directory / "train.py").write_text("import torch\nprint('train', 2)\n")
    return directory


# Children write and use bytecode caches, as an installed package does (a checkout run with
# PYTHONDONTWRITEBYTECODE=1 would recompile every module on every start).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def child(code: str, project: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=project,
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def wall(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=ENV, check=True, capture_output=True, timeout=600)
    return (time.perf_counter() - start) * 1000


def stats(values: list[float]) -> str:
    return f"{statistics.median(values):8.1f} {max(values):8.1f}"


def table(title: str, runs: list[dict[str, Any]]) -> None:
    names = sorted({n for r in runs for n in r["collectors"]})
    statuses = {
        n: sorted({r["collectors"][n][1] for r in runs if n in r["collectors"]}) for n in names
    }
    print(f"\n{title} ({len(runs)} runs)")
    print(f"  {'(ms)':<34}   median      max   status")
    for name in names:
        values = [r["collectors"][name][0] for r in runs if name in r["collectors"]]
        print(f"  {name:<34} {stats(values)}   {'/'.join(statuses[name])}")
    print(f"  {'collection (collection.duration_ms)':<34} {stats([r['total_ms'] for r in runs])}")
    print(f"  {'collect() call incl. DNA, redaction':<34} {stats([r['call_ms'] for r in runs])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--project", type=Path, help="measure in this checkout instead")
    args = parser.parse_args()
    expdna_cmd = str(Path(sys.executable).with_name("expdna"))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="expdna-collect-bench-") as tmp:
        project = args.project or make_project(Path(tmp) / "project")
        child(FRESH, project)  # warm-up: bytecode caches, page cache
        fresh = [child(FRESH, project) for _ in range(args.runs)]
        table("fresh interpreter: import expdna; expdna.collect()", fresh)
        print(f"  {'import expdna':<34} {stats([r['import_ms'] for r in fresh])}")

        loaded = child(LOADED, project, str(args.runs))
        title = "in-process, torch" + (" and ray" if loaded["ray"] else "") + " imported"
        table(title, loaded["runs"])
        calls = [r["call_ms"] for r in loaded["runs"]]

        generate = [
            wall([expdna_cmd, "generate", "-o", str(Path(tmp) / "m.json")], project)
            for _ in range(max(3, args.runs // 2))
        ]
        collect_env = [
            wall([sys.executable, "-m", "torch.utils.collect_env"], project) for _ in range(3)
        ]
    gen, env = statistics.median(generate), statistics.median(collect_env)
    print("\nwhole process, wall clock")
    print(f"  {'(ms)':<34}   median      max")
    print(f"  {'expdna generate':<34} {stats(generate)}")
    print(f"  {'python -m torch.utils.collect_env':<34} {stats(collect_env)}")
    med, worst = statistics.median(calls), max(calls)
    print("\ntargets")
    print(f"  in-process median <= 100 ms: {med:.1f} ms ({'met' if med <= 100 else 'NOT met'})")
    print(f"  in-process max <= 250 ms: {worst:.1f} ms ({'met' if worst <= 250 else 'NOT met'})")
    print(
        f"  expdna generate <= 0.3x collect_env: {gen / env:.2f}x "
        f"({'met' if gen / env <= 0.3 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
