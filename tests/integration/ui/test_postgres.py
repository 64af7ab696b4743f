"""The web view over a PostgreSQL index: the same pages and answers as over SQLite."""

from __future__ import annotations

import warnings

import pytest

from expdna.store import Store
from expdna.store.config import StoreConfig
from expdna.store.stability import stability as stability_of
from tests.factories import record_docs as record
from tests.factories import seed_doc, synthetic_doc
from tests.integration.ui.conftest import IMG

with warnings.catch_warnings():  # Starlette 1.x asks for httpx2 behind its test client
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

pytestmark = [pytest.mark.postgres, pytest.mark.filterwarnings("ignore:Using `httpx`")]


def test_every_page_answers_over_postgresql(pg_store: Store, pg_url: str) -> None:
    hostile = synthetic_doc(7, driver="550.54.15")
    hostile["hardware"]["gpu_model"] = IMG
    runs = record(
        pg_store,
        *(synthetic_doc(i, setup=i // 2) for i in range(6)),
        hostile,
        *(seed_doc(10 + k, seed=k // 2, final_loss=1.0 + k) for k in range(4)),
    )
    from expdna.ui.app import create_app

    config = StoreConfig(path=pg_store.root, index_url=pg_url)
    seed = runs[-1]
    assert seed.dna is not None
    with TestClient(create_app(config), base_url="http://localhost") as client:
        for url in (
            "/",
            "/?where=hardware.driver_version=550.54.15",
            f"/runs/{seed.run_id}",
            f"/dna/{seed.dna.value[:8]}",
            f"/diff?a={runs[0].run_id}&b={seed.run_id}",
            "/find",
            "/find?driver=550.54.15",
            f"/lineage/{seed.run_id}",
        ):
            page = client.get(url)
            assert page.status_code == 200, (url, page.text[:300])
            assert "<img" not in page.text
        fleet = client.get("/api/fleet").json()
        assert {"value": "535.104.05", "runs": 10} in fleet["driver"]
        assert {"value": IMG, "runs": 1} in fleet["gpu"]
        found = client.get("/api/find?driver=550.54.15").json()
        assert [r["run_id"] for r in found] == [hostile["run_id"]]
        stability = client.get(f"/api/stability/{seed.dna.value[:8]}?across_seeds=1").json()
        expected = stability_of(pg_store, seed.dna.value[:8], across_seeds=True).to_dict()
        assert stability == expected and stability["metrics"]["final_loss"]["n"] == 6
