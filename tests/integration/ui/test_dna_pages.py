"""A DNA with hundreds of twins: its page is paged, and no page reaches 200 KB."""

from __future__ import annotations

import re
from pathlib import Path

from expdna.store import Store
from expdna.store.config import StoreConfig
from tests.factories import manifest_of, seed_doc

TWINS = 400
LIMIT = 200_000


def test_a_dna_of_400_twins_is_paged_under_200_kb(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from expdna.ui.app import create_app

    runs = []
    for k in range(TWINS):
        doc = seed_doc(5_000 + k, seed=0, final_loss=1.0 + k / 1000, reward=0.5 + k / 100)
        doc["run_id"] = f"20260807_{k:06d}_twins_{k:04d}"
        doc["generated_at"] = f"2026-08-07T{k // 3600:02d}:{k // 60 % 60:02d}:{k % 60:02d}Z"
        runs.append(manifest_of(doc))
    assert len({m.dna.value for m in runs if m.dna}) == 1
    dna = runs[0].dna.value if runs[0].dna else ""
    with Store.open(tmp_path / "store") as store:
        store.record_many(runs)
    listed: list[str] = []
    with TestClient(
        create_app(StoreConfig(path=tmp_path / "store")), base_url="http://localhost"
    ) as client:
        url: str | None = f"/dna/{dna}"
        while url is not None:
            page = client.get(url)
            assert page.status_code == 200
            assert len(page.content) < LIMIT, (url, len(page.content))
            body = page.text[: page.text.index("<h2>Family")]
            listed += re.findall(r'<a href="/runs/(\w+)">', body)
            after = re.search(r'<a rel="next" href="(\?page=\d+)">', page.text)
            url = f"/dna/{dna}{after.group(1)}" if after else None
    assert f"Twins ({TWINS})" in client.get(f"/dna/{dna}").text
    assert listed == sorted((m.run_id for m in runs), reverse=True)  # each once, newest first
