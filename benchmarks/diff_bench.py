"""How long ``expdna diff`` takes as the number of changed fields grows.

Two manifests written to a temporary directory differ in N leaves (N = 1k, 4k, 16k by
default): half of them resolved arguments, a quarter installed packages (both in the DNA),
a quarter a dataset's file listing (outside it). Each is timed as ``expdna diff A B`` (a
whole process, the median of ``--repeat`` runs) next to a baseline in the same run: the
same command on two equal manifests of the same size, which reads, validates and hashes
as much but has no changed leaf to judge. The ratio is what to compare across machines.

    python benchmarks/diff_bench.py [--sizes 1000,4000,16000] [--repeat 3]

Target: the time over the baseline grows about linearly in N (issue "diff is quadratic":
4,000 changed leaves took 24 s).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DIGEST = "blake3:" + "ab" * 32


def console_script() -> str:
    beside = Path(sys.executable).with_name("expdna")
    if beside.is_file():
        return str(beside)
    found = shutil.which("expdna")
    if found is None:
        raise SystemExit("no expdna command: install the package (pip install -e .)")
    return found


def manifest(n: int, changed: int, side: int) -> dict[str, Any]:
    """A manifest with about ``n`` leaves of each kind; ``side`` 1 changes the first
    ``changed`` of them (half arguments, a quarter packages, a quarter listed files)."""
    args_changed, packages_changed = changed // 2, changed // 4
    files_changed = changed - args_changed - packages_changed

    def value(i: int, limit: int) -> int:
        return i + 1_000_000 if side and i < limit else i

    from expdna.manifest.dna import compute_dna
    from expdna.manifest.io import manifest_from_dict

    doc = {
        "schema_version": "1.0",
        "run_id": f"20261205_120000_1c8e2fb_{side:06d}",
        "generated_at": "2026-12-05T12:00:00Z",
        "command": {"argv": ["python", "train.py", "--lr", "0.1"], "cwd": "~/train"},
        "code": {"train": {"commit": "1c8e2fb98b7af3e1e86263ccd1f375e4d833b2aa", "dirty": False}},
        "config": {
            "resolved_args": {f"option_{i}": value(i, args_changed) for i in range(n)},
            "selected_env": {"NCCL_DEBUG": "INFO"},
        },
        "training": {"algorithm": "sft", "seeds": {"seed": 1}},
        "environment": {
            "python_version": "3.12.3",
            "packages": {
                f"package-{i}": f"{value(i, packages_changed)}.0.0" for i in range(n // 2)
            },
        },
        "hardware": {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8},
        "runtime": {"mode": "local", "node_count": 1},
        "data": {
            "datasets": [
                {
                    "root": "/data/set",
                    "digest": DIGEST,
                    "files": n // 2,
                    "bytes": n * 50,
                    "listing": [
                        [f"part-{i:06d}.bin", 100 + value(i, files_changed), DIGEST]
                        for i in range(n // 2)
                    ],
                }
            ]
        },
    }
    made = manifest_from_dict(doc)
    made.dna = compute_dna(made)
    return made.to_dict()


def timed_s(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.decode()}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="1000,4000,16000", help="changed leaves, comma-separated"
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    expdna = console_script()
    print(
        f"{'changed':>8} {'baseline s':>11} {'diff s':>8} {'ratio':>6}  (median of {args.repeat})"
    )
    with tempfile.TemporaryDirectory(prefix="expdna-diff-bench-") as tmp:
        for changed in (int(s) for s in args.sizes.split(",")):
            paths = {}
            for name, side in (("a", 0), ("b", 1), ("same", 0)):
                doc = manifest(changed, changed, side)
                if name == "same":
                    doc["run_id"] = "20261205_120000_1c8e2fb_000002"
                paths[name] = Path(tmp) / f"{name}-{changed}.json"
                paths[name].write_text(json.dumps(doc))
            cases = {
                "baseline": [expdna, "diff", str(paths["a"]), str(paths["same"])],
                "diff": [expdna, "diff", str(paths["a"]), str(paths["b"])],
            }
            found: dict[str, list[float]] = {name: [] for name in cases}
            for _ in range(args.repeat):  # round-robin: a busy moment costs both alike
                for name, argv in cases.items():
                    found[name].append(timed_s(argv))
            base, diff = (statistics.median(found[name]) for name in cases)
            print(f"{changed:>8} {base:>11.2f} {diff:>8.2f} {diff / base:>6.1f}")


if __name__ == "__main__":
    main()
