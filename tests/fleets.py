"""Synthetic fleets for ``expdna explain``: runs of one setup (the factory's setup 7) on
machines that differ in VBIOS, driver, NCCL, host and packages, each with a planted cause.

A run is :func:`fleet_doc`: the seed varies (in both places it is recorded, so the DNA
changes and the setup does not), the machine is given field by field, and the outcome is
a ``status`` section and metrics. Recorded with ``record_many`` into a real store.
"""

from __future__ import annotations

import random
from typing import Any

from expdna.store import Store
from tests.factories import manifest_of, synthetic_doc

VBIOS = ("94.00.00.00.08", "94.00.00.00.09")
DRIVERS = ("535.104.05", "550.54.15")
NCCL = ("2.21.5", "2.23.4")


def fleet_doc(
    i: int,
    *,
    seed: int,
    vbios: str = VBIOS[0],
    driver: str = DRIVERS[0],
    nccl: str = NCCL[0],
    host: str = "node-a",
    state: str = "completed",
    **metrics: float,
) -> dict[str, Any]:
    doc = synthetic_doc(i, setup=7, vbios=vbios, driver=driver)
    doc["run_id"] = f"20261201_100000_1c8e2fb_{i:06d}"
    doc["config"]["resolved_args"]["seed"] = seed
    doc["training"]["seeds"] = {"seed": seed}
    doc["hardware"]["nccl_version"] = nccl
    doc["hardware"]["hostname"] = host
    doc["runtime"]["nodes"] = [
        {
            "role": "head",
            "resources": {"CPU": 224.0, "GPU": 2.0},
            "fingerprint": {"hostname": host, "driver_version": driver},
        }
    ]
    doc["status"] = {"state": state, "started_at": doc["generated_at"]}
    doc["metrics"] = {"final_loss": 1.0, **metrics}
    return doc


def record_fleet(store: Store, docs: list[dict[str, Any]]) -> None:
    results = store.record_many(manifest_of(doc) for doc in docs)
    assert all(r.status == "recorded" for r in results), results[0]


def vbios_fleet() -> list[dict[str, Any]]:
    """40 runs: 12 on VBIOS .09 (11 fail), 28 on .08 (none fail); drivers and seeds
    spread over both, independently of the VBIOS."""
    docs = []
    for i in range(40):
        on_09 = i < 12
        failed = on_09 and i != 0
        docs.append(
            fleet_doc(
                i,
                seed=i % 4,
                vbios=VBIOS[1] if on_09 else VBIOS[0],
                driver=DRIVERS[i % 2],
                host=f"node-{'b' if on_09 else 'a'}{i % 3}",
                state="failed" if failed else "completed",
                final_loss=2.0 + (i % 5) * 0.01,
            )
        )
    return docs


def nccl_fleet() -> list[dict[str, Any]]:
    """40 runs: the loss is 0.3 higher on NCCL 2.23.4, with noise; drivers and seeds vary
    independently."""
    docs = []
    for i in range(40):
        newer = i % 2 == 1
        noise = ((i * 7919) % 13) / 100
        docs.append(
            fleet_doc(
                i,
                seed=i % 5,
                nccl=NCCL[1] if newer else NCCL[0],
                driver=DRIVERS[(i // 2) % 2],
                final_loss=2.0 + noise + (0.3 if newer else 0.0),
            )
        )
    return docs


def confounded_fleet() -> list[dict[str, Any]]:
    """30 runs: driver 550 only ever ran on node-b, where the loss is higher."""
    docs = []
    for i in range(30):
        on_b = i % 3 == 0
        noise = ((i * 31) % 7) / 100
        docs.append(
            fleet_doc(
                i,
                seed=i % 4,
                driver=DRIVERS[1] if on_b else DRIVERS[0],
                host="node-b" if on_b else "node-a",
                final_loss=2.0 + noise + (0.5 if on_b else 0.0),
            )
        )
    return docs


def null_fleet() -> list[dict[str, Any]]:
    """40 runs with drivers, NCCL, VBIOS and seeds varying and a loss that ignores them all."""
    rng = random.Random(28)
    docs = []
    for i in range(40):
        noise = rng.gauss(0.0, 0.05)
        docs.append(
            fleet_doc(
                i,
                seed=i % 4,
                vbios=VBIOS[(i // 3) % 2],
                driver=DRIVERS[(i // 5) % 2],
                nccl=NCCL[(i // 7) % 2],
                final_loss=2.0 + noise,
            )
        )
    return docs
