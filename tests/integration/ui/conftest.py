"""One store for every web view test: 5,000 synthetic runs plus the runs each page needs
(seeds with metrics, lineage, a pin, an incomplete run, a hostile manifest), built once."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from expdna.store import Store
from expdna.store.config import StoreConfig
from tests.factories import PATCH_TEXT, dna, manifest_of, seed_doc, synthetic_doc
from tests.history import record_history

SIZE = 5_000
SCRIPT = "<script>alert('argv')</script>"
IMG = '"><img src=x onerror=alert(1)>'
PIN_NAME = "vit_best <1>.pth"


@dataclass(frozen=True)
class UiStore:
    root: Path
    config: StoreConfig
    seeds: list[str]  # run ids of the seed runs, oldest first
    seed_dna: str
    hostile: str
    incomplete: str
    pin_digest: str


def _hostile_doc() -> dict:
    doc = synthetic_doc(90_001, patch=PATCH_TEXT + f"+{SCRIPT}\n+{IMG}\n")
    doc["run_id"] = "20260806_000000_hostile_0001"
    doc["generated_at"] = "2026-08-06T00:00:00Z"
    doc["command"]["argv"] = ["python", "train.py", SCRIPT, IMG]
    doc["config"]["resolved_args"]["note"] = SCRIPT
    doc["config"]["resolved_args"][IMG] = IMG
    doc["hardware"]["gpu_model"] = IMG
    doc["data"]["datasets"][0]["root"] = SCRIPT
    doc["metrics"] = {"loss": 0.25}
    return doc


@pytest.fixture(scope="session")
def ui_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiStore]:
    root = tmp_path_factory.mktemp("ui") / "store"
    with Store.open(root) as store:
        record_history(store, SIZE, call=SIZE)
        seeds = []
        for k in range(6):  # seeds 0, 0, 1, 1, 2, 2: three DNAs of one family
            doc = seed_doc(80_000 + k, seed=k // 2, final_loss=1.0 + k / 10, reward=0.5 + k)
            doc["run_id"] = f"20260807_00000{k}_seeds_{k:04d}"
            doc["generated_at"] = f"2026-08-07T00:00:0{k}Z"
            seeds.append(manifest_of(doc))
        store.record_many(seeds)
        hostile = manifest_of(_hostile_doc())
        store.record(hostile)
        partial = copy.deepcopy(synthetic_doc(90_002))
        partial["run_id"] = "20260806_000001_partial_0001"
        partial["generated_at"] = "2026-08-06T00:00:01Z"
        partial["code"] = {}
        partial["unknown"] = {"code": "collector git timeout after 4.0 s"}
        incomplete = manifest_of(partial)
        store.record(incomplete)
        store.link(seeds[0].run_id, seeds[2].run_id, "resumed_from")
        store.link(seeds[2].run_id, seeds[4].run_id, "derived_from")
        pin = store.pin(run_id=seeds[4].run_id, digest="blake3:" + "c4" * 32, name=PIN_NAME)
    yield UiStore(
        root=root,
        config=StoreConfig(path=root),
        seeds=[m.run_id for m in seeds],
        seed_dna=dna(seeds[0]),
        hostile=hostile.run_id,
        incomplete=incomplete.run_id,
        pin_digest=pin.digest,
    )
