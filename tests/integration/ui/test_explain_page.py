"""``/explain`` in the web view: the same answer as ``expdna explain``, with a strip of the
metric per value of each top field, on a real SQLite store of a fleet with a planted cause."""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape

from expdna.store import Store
from expdna.store.config import StoreConfig
from expdna.store.explain import ABSENT
from tests.factories import invoke
from tests.fleets import NCCL, fleet_doc, nccl_fleet, record_fleet, vbios_fleet

with warnings.catch_warnings():  # Starlette 1.x asks for httpx2 behind its test client
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx`")


def test_explain_page_ranks_like_the_cli_and_draws_each_value(tmp_path: Path) -> None:
    from expdna.ui.app import create_app

    docs = nccl_fleet()
    root = tmp_path / "store"
    store = Store.open(root)
    record_fleet(store, docs)
    store.close()
    ref = docs[0]["run_id"]
    with TestClient(create_app(StoreConfig(path=root)), base_url="http://localhost") as client:
        empty = client.get("/explain")
        assert empty.status_code == 200 and "<form" in empty.text
        page = client.get("/explain", params={"metric": "final_loss", "same_setup": ref})
        assert page.status_code == 200, page.text[:300]
        bad = client.get(
            "/explain", params={"metric": "final_loss", "worst": "200%", "same_setup": ref}
        )
        assert bad.status_code == 400 and "--worst" in bad.text
    cli = json.loads(
        invoke(root, "explain", "--metric", "final_loss", "--same-setup", ref, "--json").output
    )
    html = page.text
    assert str(escape(cli["top"])) in html
    assert html.index("hardware.nccl_version") < html.index("hardware.driver_version")
    # the top field's two values, each a strip of its 20 runs
    drawn = html.split("per value of the top fields", 1)[1]
    for value in NCCL:
        assert f'aria-label="final_loss of the runs with {value}"' in drawn
    assert drawn.count('<circle class="dot"') >= 40
    assert "<script" not in html and "association, not cause" in html


def _client(tmp_path: Path, docs: list[dict[str, Any]]) -> tuple[Path, TestClient]:
    """A store of ``docs`` under ``tmp_path``, and a client of the web view over it."""
    from expdna.ui.app import create_app

    root = tmp_path / "store"
    with Store.open(root) as store:
        record_fleet(store, docs)
    return root, TestClient(create_app(StoreConfig(path=root)), base_url="http://localhost")


def test_the_rank_column_numbers_each_finding(tmp_path: Path) -> None:
    docs = nccl_fleet()
    root, client = _client(tmp_path, docs)
    with client:
        page = client.get(
            "/explain", params={"metric": "final_loss", "same_setup": docs[0]["run_id"]}
        )
    assert page.status_code == 200, page.text[:300]
    cli = json.loads(
        invoke(
            root, "explain", "--metric", "final_loss", "--same-setup", docs[0]["run_id"], "--json"
        ).output
    )
    ranks = re.findall(r'<tr>\s*<td rowspan="\d+">(\d+)</td>', page.text)
    assert len(cli["findings"]) >= 2
    assert ranks == [str(k) for k in range(1, len(cli["findings"]) + 1)]


def _cli_error(root: Path, *args: str) -> str:
    """The message ``expdna explain ARGS`` exits 1 with (its one line, less the prefix)."""
    done = invoke(root, "explain", *args)
    assert done.exit_code == 1, done.output
    [line] = done.output.strip().splitlines()
    return line.removeprefix("expdna: error: ")


@pytest.mark.parametrize(
    ("params", "args"),
    [
        ({"metric": "nosuch"}, ["--metric", "nosuch"]),
        (
            {"status": "failed", "where": "training.algoritm=grpo"},
            ["--status", "failed", "--where", "training.algoritm=grpo"],
        ),
    ],
    ids=["no-run-has-the-metric", "a-typo-in-where"],
)
def test_no_run_with_the_outcome_is_the_clis_not_found(
    tmp_path: Path, params: dict[str, str], args: list[str]
) -> None:
    docs = vbios_fleet()
    root, client = _client(tmp_path, docs)
    if "where" not in params:
        params = {**params, "same_setup": docs[0]["run_id"]}
        args = [*args, "--same-setup", docs[0]["run_id"]]
    with client:
        page = client.get("/explain", params=params)
    message = _cli_error(root, *args)
    assert page.status_code == 404, page.text[:300]
    assert f'<p class="error">{escape(message)}</p>' in page.text
    if "where" in params:
        assert "did you mean training.algorithm?" in message
    else:
        assert message == "none of the 40 selected runs has nosuch"
    assert 'class="explain"' not in page.text  # no empty table of findings


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({"metric": "final_loss", "worst": "200%", "same_setup": "RUN"}, 400, "--worst '200%'"),
        ({"metric": "final_loss", "where": "=grpo"}, 400, "expected PATH=VALUE"),
        ({"metric": "final_loss", "same_setup": "20991231_no_such_run"}, 404, "no_such_run"),
        ({"metric": "nosuch", "where": "training.algorithm=grpo"}, 404, "has nosuch"),
    ],
    ids=["bad-worst", "bad-where", "unknown-run", "no-outcome"],
)
def test_an_error_shows_the_form_filled_with_what_was_sent(
    tmp_path: Path, params: dict[str, str], status: int, message: str
) -> None:
    docs = vbios_fleet()[:8]
    _, client = _client(tmp_path, docs)
    if params.get("same_setup") == "RUN":
        params = {**params, "same_setup": docs[0]["run_id"]}
    with client:
        page = client.get("/explain", params=params)
    assert page.status_code == status, page.text[:300]
    html = page.text
    assert '<form method="get" action="/explain">' in html
    for name, value in params.items():
        assert f'name="{name}" value="{escape(value)}"' in html, name
    [shown] = re.findall(r'<p class="error">(.*?)</p>', html, re.DOTALL)
    assert str(escape(message)) in shown


def _strip_rows(html: str, path: str) -> list[tuple[str, set[str]]]:
    """The strips drawn for the finding whose first field is ``path``: each row's value and
    the run ids its dots name."""
    drawn = html.split("per value of the top fields", 1)[1]
    section = drawn.split(f"<h3><code>{path}</code></h3>", 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr><td class="mono">(.*?)</td>(.*?)</tr>', section, re.DOTALL)
    return [(value, set(re.findall(r"<title>([^<:]+): ", svg))) for value, svg in rows]


#: Each group's two GPUs' VBIOS: the second and the third both read "A|B".
_VBIOS_ALIKE = (("A", "A"), ("A|B", "A|B"), ("A", "B"))


def _alike_fleet(field: str) -> tuple[list[dict[str, Any]], str, list[set[str]]]:
    """24 runs in three groups of 8, each with its own loss, that differ in ``field`` by
    values two of which read alike; the field's path and each group's run ids."""
    docs = []
    for i in range(24):
        group = i // 8
        doc = fleet_doc(i, seed=i % 4, final_loss=1.0 + group + (i % 8) / 100)
        if field == "vbios":  # one VBIOS "A|B", and two GPUs' "A" and "B" joined as "A|B"
            for gpu, vbios in zip(doc["hardware"]["gpus"], _VBIOS_ALIKE[group], strict=True):
                gpu["vbios_version"] = vbios
        elif group == 2:  # NCCL "(absent)", no NCCL recorded, and one more
            del doc["hardware"]["nccl_version"]
        else:
            doc["hardware"]["nccl_version"] = ("2.21.5", ABSENT)[group]
        docs.append(doc)
    path = "hardware.gpus.vbios_version" if field == "vbios" else "hardware.nccl_version"
    groups = [{d["run_id"] for d in docs[k * 8 : (k + 1) * 8]} for k in range(3)]
    return docs, path, groups


@pytest.mark.parametrize("field", ["vbios", "nccl"])
def test_two_values_that_read_alike_are_two_strips(tmp_path: Path, field: str) -> None:
    docs, path, groups = _alike_fleet(field)
    _, client = _client(tmp_path, docs)
    with client:
        page = client.get(
            "/explain", params={"metric": "final_loss", "same_setup": docs[0]["run_id"]}
        )
    assert page.status_code == 200, page.text[:300]
    rows = _strip_rows(page.text, path)
    assert len(rows) == 3 and len({value for value, _ in rows}) == 2  # two read alike
    assert sorted(map(sorted, (runs for _, runs in rows))) == sorted(map(sorted, groups))


def test_huge_metrics_draw_finite_coordinates(tmp_path: Path) -> None:
    docs = nccl_fleet()
    # near the largest float: positive on one NCCL, negative on the other
    for i, doc in enumerate(docs):
        doc["metrics"]["final_loss"] = (1.7e308, -1.7e308, 1e308, -1e308)[i % 4]
    _, client = _client(tmp_path, docs)
    with client:
        page = client.get(
            "/explain", params={"metric": "final_loss", "same_setup": docs[0]["run_id"]}
        )
    assert page.status_code == 200, page.text[:300]
    drawn = page.text.split("per value of the top fields", 1)[1]
    coordinates = re.findall(r'\b(?:cx|cy|x|x1|x2|y|width)="([^"]*)"', drawn)
    assert coordinates and drawn.count('<circle class="dot"') >= 40
    assert all(math.isfinite(float(c)) for c in coordinates), sorted(set(coordinates))
