"""Manifest core speed: DNA of a typical 3 KB manifest against a naive baseline, redaction.

Prints ratios against baselines measured in the same run (these machines are shared and
noisy, so absolute numbers move; the ratios are what to compare).

    python benchmarks/manifest_bench.py [--repeat 2000]

Targets (issue "Manifest core"): DNA under 1 ms and within 3x of
json.dumps(sort_keys=True) + sha256 of the same object; redaction under 5 ms per manifest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "vectors"))

from make_dna_vectors import CASES

from expdna.manifest.dna import compute_dna
from expdna.manifest.io import manifest_from_dict, serialise
from expdna.manifest.redact import redact_tree


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def report(name: str, samples: list[float]) -> float:
    median = statistics.median(samples)
    p95 = sorted(samples)[int(len(samples) * 0.95)]
    print(f"  {name:<44} median {median:8.4f} ms   p95 {p95:8.4f} ms")
    return median


def typical_manifest() -> Any:
    doc = json.loads(json.dumps(CASES["typical"]))
    # pad to a typical ~3 KB: a few dozen resolved args and packages, as real runs have
    for i in range(25):
        doc["config"]["resolved_args"][f"option_{i}"] = i * 0.5
    for i in range(12):
        doc["environment"]["packages"][f"package-{i}"] = f"{i}.{i + 1}.0"
    doc["code"]["relax"]["patch"]["text"] = None
    return manifest_from_dict(doc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()

    manifest = typical_manifest()
    doc = manifest.to_dict()
    size = len(serialise(doc))
    print(f"typical manifest: {size} bytes in the file form, repeat {args.repeat}")

    compute_dna(manifest)  # warm caches and regex compilation
    naive = report(
        "baseline json.dumps(sort_keys)+sha256",
        timed(
            lambda: hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest(),
            args.repeat,
        ),
    )
    dna = report(
        "expdna DNA of the same dict (7 sections)", timed(lambda: compute_dna(doc), args.repeat)
    )
    dna_model = report(
        "expdna DNA of the pydantic model (+ dump)",
        timed(lambda: compute_dna(manifest), args.repeat),
    )
    redact = report(
        "expdna redact_tree (whole manifest)", timed(lambda: redact_tree(doc), args.repeat)
    )
    patched = json.loads(json.dumps(doc))
    patched["code"]["relax"]["patch"]["text"] = "".join(
        f"+    value_{i} = compute(x, {i})  # line {i}\n" for i in range(800)
    )
    redact_patch = report(
        "expdna redact_tree (with a 32 KB patch)",
        timed(lambda: redact_tree(patched), max(50, args.repeat // 20)),
    )
    print()
    print(
        f"DNA: {dna:.3f} ms (target < 1 ms), {dna / naive:.2f}x the naive baseline "
        f"(target <= 3x); from the model {dna_model:.3f} ms, {dna_model / naive:.2f}x"
    )
    print(
        f"redaction: {redact:.3f} ms per manifest (target < 5 ms); "
        f"{redact_patch:.3f} ms with a 32 KB patch"
    )


if __name__ == "__main__":
    main()
