"""The web view's pictures in the guides: a store of synthetic runs (tests/factories.py:
two GPU models, four drivers, two VBIOS versions, repeats of one setup across three seeds
with metrics, a lineage and a pinned checkpoint), served by ``expdna ui``'s app and
photographed in Debian's Chromium.

    .venv/bin/python docs/tools/ui_screenshot.py [--out docs/img]

Writes ui-runs.png (the runs page) and ui-stability.png (a DNA page's stability across
seeds, with its strip plots), and prints the store's path, the `expdna ui`
command line to serve it, and the JSON of /api/fleet (pasted in the guides).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.factories import manifest_of, seed_doc, synthetic_doc
from tests.integration.ui.browser import chromium, serving

from expdna.store import Store
from expdna.store.config import StoreConfig

GPUS = ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB")
DRIVERS = ("550.54.15", "550.90.07", "535.104.05", "560.35.03")
VBIOS = ("96.00.89.00.01", "96.00.5A.00.01")


def build(root: Path) -> tuple[str, str]:
    """The demo store; returns (a seed run's id, its DNA)."""
    docs = []
    for i in range(120):
        doc = synthetic_doc(
            i, setup=i // 3, vbios=VBIOS[i % 7 == 0], driver=DRIVERS[(i // 3) % len(DRIVERS)]
        )
        gpu = GPUS[(i // 5) % 2]
        doc["hardware"]["gpu_model"] = gpu
        for g in doc["hardware"]["gpus"]:
            g["name"] = gpu
        doc["metrics"] = {"final_loss": round(0.9 + (i % 5) * 0.013, 4), "accuracy": 0.71}
        docs.append(doc)
    for k in range(9):  # three seeds, three repeats each
        doc = seed_doc(1000 + k, seed=k // 3, final_loss=0.85 + (k % 3) * 0.01 + (k // 3) * 0.03)
        doc["metrics"]["accuracy"] = round(0.74 - (k // 3) * 0.01 - (k % 3) * 0.002, 4)
        doc["run_id"] = f"20260807_1200{k:02d}_vitcifar_s{k // 3}r{k % 3}"
        doc["generated_at"] = f"2026-08-07T12:00:{k:02d}Z"
        docs.append(doc)
    manifests = [manifest_of(d) for d in docs]
    with Store.open(root) as store:
        store.record_many(manifests)
        seeds = [m.run_id for m in manifests[-9:]]
        store.link(seeds[0], seeds[3], "resumed_from")
        store.pin(run_id=seeds[3], digest="blake3:" + "5e" * 32, name="vit_base_best.pth")
        dna = store.get(seeds[0]).dna
    return seeds[0], dna


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    parser.add_argument("--store-only", type=Path, default=None)
    args = parser.parse_args()
    if args.store_only is not None:
        build(args.store_only)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="ui_demo_")) / "store"
    _, dna = build(root)
    print(f"store: {root}\nserve it: expdna --store {root} ui")
    with serving(StoreConfig(path=root)) as base, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 560})
        page.goto(base + "/")
        page.screenshot(path=str(args.out / "ui-runs.png"))
        page.goto(f"{base}/dna/{dna[:12]}")
        stability = page.locator("table.stability").last
        stability.screenshot(path=str(args.out / "ui-stability.png"))
        with urllib.request.urlopen(f"{base}/api/fleet") as response:
            fleet = json.load(response)
    print(json.dumps({k: v for k, v in fleet.items() if k in ("gpu", "driver")}, indent=2))


if __name__ == "__main__":
    main()
