"""How fast the ``expdna`` command starts, as whole processes, next to a bare interpreter.

Times, in the same run and each as the median of ``--repeat`` runs: ``python -c pass``,
``expdna --version``, ``expdna --help`` and every read command (``show``, ``runs``,
``twins``, ``find``, ``which``, ``lineage``, ``stability``, ``export``, ``db current``,
``fsck``) on a small SQLite store made in a temporary directory (ten manifests written by
``expdna generate --record``, one checkpoint pinned, one lineage link). The cases run
round-robin (each round runs every case once), so a busy minute on a shared machine costs
them all alike. Each figure is printed with its ratio to the bare interpreter, which is
what to compare across machines: the absolute times move with the machine and its load.

    python benchmarks/cli_bench.py [--repeat 15] [--command PATH]

``--command`` names the console script to time (default: ``expdna`` beside this
interpreter, else on ``$PATH``).

Targets: ``expdna --version`` <= 5x the bare interpreter (issue "The house"), every read
command <= 15x through the one read layer (expdna.store.index.read; issue #24).
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


def timed_s(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Wall time of ``argv`` as a fresh process."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode not in (0, 1):  # 1: a negative answer (find matching nothing)
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.decode()}")
    return time.perf_counter() - start


def medians_s(
    cases: dict[str, list[str]], repeat: int, env: dict[str, str], cwd: Path
) -> dict[str, float]:
    """Median wall time of each case over ``repeat`` rounds; a first (cold cache) round is
    dropped."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for i in range(repeat + 1):
        for name, argv in cases.items():
            seconds = timed_s(argv, env, cwd)
            if i:
                times[name].append(seconds)
    return {name: statistics.median(values) for name, values in times.items()}


RUNS = 10


def make_store(expdna: str, work: Path, env: dict[str, str]) -> list[str]:
    """:data:`RUNS` generated manifests recorded in ``$EXPDNA_STORE``; their run ids."""
    run_ids = []
    for lr in (f"0.{i}" for i in range(1, RUNS + 1)):
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
    return run_ids


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
        run_ids = make_store(expdna, work, env)
        run_id = run_ids[0]
        subprocess.run(
            [expdna, "link", run_ids[1], run_id, "--as", "resumed_from"],
            env=env,
            cwd=work,
            check=True,
            capture_output=True,
        )

        metrics = (  # stability has a metric to summarise
            "import sys\nfrom expdna.store import Store\n"
            "with Store.open(sys.argv[1]) as s: s.record_metrics(sys.argv[2], {'loss': 0.5})"
        )
        subprocess.run([sys.executable, "-c", metrics, env["EXPDNA_STORE"], run_id], check=True)
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
        cases.update({f"expdna {name}": [expdna, *argv] for name, argv in reads.items()})
        figures = medians_s(cases, args.repeat, env, work)

    bare = figures["python -c pass"]
    print(f"median of {args.repeat} rounds, a {RUNS}-run SQLite store ({expdna})")
    for name, seconds in figures.items():
        print(f"  {name:<26} {seconds * 1000:8.1f} ms  {seconds / bare:5.1f}x")
    targets = {"expdna --version": VERSION_TARGET}
    targets.update({f"expdna {name}": READ_TARGET for name in reads})
    for name, target in targets.items():
        ratio = figures[name] / bare
        verdict = "met" if ratio <= target else "MISSED"
        print(f"target {name} <= {target:g}x: {ratio:.1f}x ({verdict})")


if __name__ == "__main__":
    main()
