"""How long the code collection takes on a checkout holding a 5,000-file ``wandb/`` folder.

In one run, each as the median of ``--repeat`` in-process collections (``collect_git``,
the collector behind the ``code`` section): a small checkout of a dozen source files with
an untracked edit (the baseline), then the same checkout with W&B's output folder of
``--files`` files beside an MLflow store and ``lightning_logs/``. Both figures are printed
with their ratio, since the absolute times move with the machine and its load. A third
figure adds the pinned-checkpoint lookup: a real store with ``--pins`` pins (one of them a
``ckpt.pt`` inside the checkout), asked through its SQLite index with the standard library.

    python benchmarks/outputs_bench.py [--files 5000] [--repeat 7] [--pins 200]

Target (issue "Identity on real training code"): under 100 ms with the ``wandb/`` folder.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from expdna.api import collect
from expdna.collectors.context import CollectContext
from expdna.collectors.git import collect_git
from expdna.digest import hex_of
from expdna.store import Store
from expdna.store.pinned_paths import pinned_paths

TARGET_MS = 100.0


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_checkout(root: Path) -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for i in range(12):
        (root / f"mod{i}.py").write_text(f"X = {i}\n")
    git(root, "add", "-A")
    git(root, "-c", "user.name=b", "-c", "user.email=b@e", "commit", "-q", "-m", "init")
    (root / "newmod.py").write_text("Y = 1\n")  # one untracked source file: a real change
    return root


def add_tool_outputs(root: Path, files: int) -> None:
    per_run = 50
    for i in range(files):
        run = root / "wandb" / f"run-20260805_1430{i // per_run:04d}-abc{i // per_run}"
        folder = run / ("files" if i % 2 else "logs")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"{i}\n")
    for i in range(20):
        meta = root / "mlruns" / "0" / f"r{i}" / "meta.yaml"
        meta.parent.mkdir(parents=True, exist_ok=True)
        meta.write_text("a: 1\n")
    hparams = root / "lightning_logs" / "version_0" / "hparams.yaml"
    hparams.parent.mkdir(parents=True)
    hparams.write_text("lr: 0.1\n")


def make_store(root: Path, checkout: Path, pins: int) -> Path:
    """A store with one run and ``pins`` pins, the last one ``ckpt.pt`` in ``checkout``."""
    store = Store.open(root)
    try:
        run = collect(cwd=checkout, collectors=["git"])
        store.record(run)
        for i in range(pins - 1):
            digest = hex_of(str(i).encode())
            store.pin(run_id=run.run_id, digest=digest, name=f"c{i}.pt", path=f"/ckpt/c{i}.pt")
        ckpt = checkout / "ckpt.pt"
        ckpt.write_bytes(b"weights" * 1000)
        store.pin_file(ckpt, run=run.run_id)
    finally:
        store.close()
    return root


def median_ms(root: Path, repeat: int, store: Path | None = None) -> float:
    pinned = (lambda: pinned_paths([store])) if store is not None else None
    ctx = CollectContext(
        cwd=root, environ={"PATH": "/usr/bin:/bin"}, use_cache=False, pinned=pinned
    )
    collect_git(ctx)  # warm the file system cache
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        section = collect_git(ctx)
        times.append((time.perf_counter() - start) * 1000)
    assert section["root"]["dirty"] is True, "the untracked source file must count"
    return statistics.median(times)


def lookup_ms(store: Path, repeat: int) -> float:
    """The pinned-path lookup alone (one read-only SQLite query and the pending log)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        pinned_paths([store])
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--pins", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = make_checkout(Path(tmp) / "root")
        baseline = median_ms(root, args.repeat)
        add_tool_outputs(root, args.files)
        section = collect_git(CollectContext(cwd=root, use_cache=False))
        patch = section["root"]["patch"]["text"]
        assert "wandb" not in patch and "newmod.py" in patch
        with_outputs = median_ms(root, args.repeat)
        store = make_store(Path(tmp) / "store", root, args.pins)
        with_pins = median_ms(root, args.repeat, store)
        lookup = lookup_ms(store, args.repeat * 5)
    print(f"baseline (12 files, no outputs): {baseline:8.1f} ms")
    print(
        f"with wandb/ ({args.files} files):   {with_outputs:8.1f} ms"
        f"  ({with_outputs / baseline:.2f}x baseline; target < {TARGET_MS:g} ms)"
    )
    print(
        f"with {args.pins} pins asked:        {with_pins:8.1f} ms"
        f"  ({with_pins / baseline:.2f}x baseline; target < {TARGET_MS:g} ms)"
    )
    print(f"  of which the pin lookup alone:  {lookup:8.2f} ms")
    for note in getattr(section, "notes", []):
        print(f"  {note}")


if __name__ == "__main__":
    main()
