"""How fast the ``expdna`` command starts, as whole processes, next to a bare interpreter.

Times, in the same run and each as the median of ``--repeat`` runs: ``python -c pass``,
``expdna --version``, ``expdna --help`` and every read command (``show``, ``runs``,
``twins``, ``find``, ``which``, ``lineage``, ``stability``, ``export``, ``db current``,
``fsck``) on a small store made in a temporary directory (two manifests written by
``expdna generate --record``, one checkpoint pinned).
Each figure is printed with its ratio to the bare interpreter, which is what to compare
across machines: the absolute times move with the machine and its load.

    python benchmarks/cli_bench.py [--repeat 15] [--command PATH]

``--command`` names the console script to time (default: ``expdna`` beside this
interpreter, else on ``$PATH``).

Targets: ``expdna --version`` <= 5x the bare interpreter (issue "The house"), every read
command <= 15x (issue "The store"; before it only ``twins`` met it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VERSION_TARGET = 5.0
#: Every read command on a small SQLite store (issue "The store").
READ_TARGET = 15.0


def console_script() -> str:
    beside = Path(sys.executable).with_name("expdna")
    if beside.is_file():
        return str(beside)
    found = shutil.which("expdna")
    if found is None:
        raise SystemExit("no expdna command: install the package (pip install -e .)")
    return found


def median_s(argv: list[str], repeat: int, env: dict[str, str], cwd: Path) -> float:
    """Median wall time of ``argv`` as a fresh process; the first (cold cache) run is dropped."""
    times = []
    for i in range(repeat + 1):
        start = time.perf_counter()
        done = subprocess.run(
            argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        if done.returncode not in (0, 1):  # 1: a negative answer (find matching nothing)
            raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}")
        if i:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def make_store(expdna: str, work: Path, env: dict[str, str]) -> str:
    """Two generated manifests recorded in ``$EXPDNA_STORE``; the first one's run id."""
    run_ids = []
    for lr in ("0.1", "0.2"):
        done = subprocess.run(
            [
                expdna,
                "generate",
                "--json",
                "--record",
                "-o",
                str(work),
                "--",
                "train.py",
                "--lr",
                lr,
            ],
            env=env,
            cwd=work,
            check=True,
            capture_output=True,
            text=True,
        )
        run_ids.append(json.loads(done.stdout)["run_id"])
    return run_ids[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--command", default=None, help="the expdna console script to time")
    args = parser.parse_args()
    expdna = args.command or console_script()

    with tempfile.TemporaryDirectory(prefix="expdna-cli-bench-") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
        env["EXPDNA_STORE"] = str(work / "store")
        env["EXPDNA_CACHE_DIR"] = str(work / "cache")
        run_id = make_store(expdna, work, env)

        ckpt = work / "ckpt.pt"
        ckpt.write_bytes(b"weights")
        subprocess.run(
            [expdna, "pin", str(ckpt), "--run", run_id, "--name", "best.pt"],
            env=env,
            cwd=work,
            check=True,
            capture_output=True,
        )
        out = str(work / "runs.parquet")
        cases = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "expdna --version": [expdna, "--version"],
            "expdna --help": [expdna, "--help"],
        }
        reads = {
            "show RUN": ["show", run_id],
            "runs": ["runs"],
            "twins RUN": ["twins", run_id],
            "find --vbios X": ["find", "--vbios", "x"],
            "which NAME": ["which", "best.pt"],
            "lineage RUN": ["lineage", run_id],
            "stability RUN": ["stability", run_id],
            "export --parquet": ["export", "--parquet", out],
            "db current": ["db", "current"],
            "fsck": ["fsck"],
        }
        if importlib.util.find_spec("pyarrow") is None:
            del reads["export --parquet"]
        cases.update({f"expdna {name}": [expdna, *argv] for name, argv in reads.items()})
        figures = {name: median_s(argv, args.repeat, env, work) for name, argv in cases.items()}

    bare = figures["python -c pass"]
    print(f"median of {args.repeat} runs each ({expdna})")
    for name, seconds in figures.items():
        print(f"  {name:<18} {seconds * 1000:8.1f} ms  {seconds / bare:5.1f}x")
    targets = {"expdna --version": VERSION_TARGET}
    targets.update({f"expdna {name}": READ_TARGET for name in reads})
    for name, target in targets.items():
        ratio = figures[name] / bare
        verdict = "met" if ratio <= target else "MISSED"
        print(f"target {name} <= {target:g}x: {ratio:.1f}x ({verdict})")


if __name__ == "__main__":
    main()
