"""A synthetic history for the web view's tests and benchmark: ``store_bench.py``'s shape
(every DNA shared by 2 runs, 1 % of runs on one VBIOS, 20 drivers), recorded in bulk.

Manifests are validated once per setup and copied for its second run, so building 5,000
runs costs the record pipeline's time, not pydantic's.
"""

from __future__ import annotations

from collections.abc import Iterator

from expdna.manifest.dna import compute_dna
from expdna.manifest.io import manifest_from_dict
from expdna.manifest.model import Manifest
from expdna.store import Store
from tests.factories import synthetic_doc

RARE_VBIOS = "96.00.89.00.01"
VBIOS = "96.00.5A.00.01"
DRIVERS = [f"550.{54 + k}.{k:02d}" for k in range(20)]


def run_id(i: int) -> str:
    return f"20260805_{i // 3600 % 24:02d}{i // 60 % 60:02d}{i % 60:02d}_1c8e2fb_{i:07d}"


def history(size: int, *, start: int = 0) -> Iterator[Manifest]:
    """Manifests ``start`` .. ``start + size - 1``; runs ``2k`` and ``2k + 1`` share a DNA."""
    dna = None
    for i in range(start, start + size):
        setup = i // 2
        doc = synthetic_doc(
            i,
            setup=setup,
            vbios=RARE_VBIOS if setup % 100 == 0 else VBIOS,
            driver=DRIVERS[setup % 20],
        )
        doc["run_id"] = run_id(i)
        manifest = manifest_from_dict(doc)
        if i % 2 == 0 or i == start or dna is None:
            dna = compute_dna(manifest)
        manifest.dna = dna
        yield manifest


def record_history(store: Store, size: int, *, call: int = 10_000) -> None:
    """Record ``size`` runs of :func:`history`, ``call`` runs a ``record_many`` call."""
    for start in range(0, size, call):
        results = store.record_many(history(min(call, size - start), start=start))
        bad = [r for r in results if r.status != "recorded"]
        assert not bad, bad[0]
