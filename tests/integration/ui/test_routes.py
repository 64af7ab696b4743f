"""Every page and API route of ``expdna ui`` through Starlette's test client, on one real
SQLite store; the API's answers equal the CLI's ``--json`` for the same question."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from markupsafe import escape

from tests.factories import EXPDNA, invoke
from tests.history import DRIVERS, RARE_VBIOS, run_id
from tests.integration.ui.conftest import IMG, PIN_NAME, SCRIPT, SIZE, UiStore

with warnings.catch_warnings():  # Starlette 1.x asks for httpx2 behind its test client
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx`")


@pytest.fixture(scope="module")
def client(ui_store: UiStore) -> Iterator[TestClient]:
    from expdna.ui.app import create_app

    with TestClient(create_app(ui_store.config), base_url="http://localhost") as c:
        yield c


def cli_json(ui_store: UiStore, *args: str) -> object:
    result = invoke(ui_store.root, *args, "--json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


# --- pages -----------------------------------------------------------------------------------


def test_runs_page_lists_the_newest_runs_with_their_columns_and_pages_on(
    client: TestClient, ui_store: UiStore
) -> None:
    page = client.get("/")
    assert page.status_code == 200
    html = page.text
    newest = cli_json(ui_store, "runs", "--limit", "50")
    assert [r["run_id"] for r in newest] == re.findall(r'<a href="/runs/([^"]+)">', html)
    for header in ("Run", "DNA", "Family", "GPU", "Driver", "Commit"):
        assert f"<th>{header}</th>" in html
    assert "final_loss" in html  # a key metric column
    assert 'rel="next"' in html and 'rel="prev"' not in html
    second = client.get("/?page=2").text
    assert 'rel="prev"' in second
    assert run_id(SIZE - 1 - 50 + 8) in second  # 8 extra runs are newer than the history


def test_runs_page_filters_as_where_and_by_dna_and_dates(
    client: TestClient, ui_store: UiStore
) -> None:
    page = client.get("/", params={"where": f"hardware.driver_version={DRIVERS[3]}", "limit": 200})
    ids = re.findall(r'<a href="/runs/([^"]+)">', page.text)
    expected = cli_json(
        ui_store, "runs", "--where", f"hardware.driver_version={DRIVERS[3]}", "--limit", "200"
    )
    assert ids == [r["run_id"] for r in expected] and len(ids) == 200 < SIZE // 20
    assert client.get("/?limit=201").status_code == 400  # a page of HTML stays light
    one = client.get("/", params={"dna": ui_store.seed_dna[:10]}).text
    assert re.findall(r'<a href="/runs/([^"]+)">', one) == ui_store.seeds[:2][::-1]
    dated = client.get("/", params={"since": "2026-08-07", "until": "2026-08-07T00:00:02Z"})
    assert re.findall(r'<a href="/runs/([^"]+)">', dated.text) == ui_store.seeds[:2][::-1]


def test_incomplete_runs_are_marked(client: TestClient, ui_store: UiStore) -> None:
    html = client.get("/").text
    row = next(r for r in html.split("<tr") if ui_store.incomplete in r)
    assert 'class="incomplete"' in row and "incomplete: code" in row


def test_run_page_shows_sections_patch_tree_data_pins_lineage_metrics(
    client: TestClient, ui_store: UiStore
) -> None:
    page = client.get(f"/runs/{ui_store.seeds[4]}")
    assert page.status_code == 200
    html = page.text
    record = cli_json(ui_store, "show", ui_store.seeds[4])[0]
    for name, digest in record["sections"].items():
        assert f'<td>{name}</td><td class="mono">{digest}</td>' in html
    assert '<span class="add">+lr=2</span>' in html and '<span class="del">-lr=1</span>' in html
    assert "resolved_args" in html and "/data/set" in html
    assert f"/checkpoints/{quote(PIN_NAME, safe='')}" in html
    assert f'href="/runs/{ui_store.seeds[2]}"' in html  # its parent, in the lineage
    assert "final_loss" in html and "1.4" in html
    assert f"/diff?a={ui_store.seeds[4]}&amp;b={ui_store.seeds[5]}" in html  # its twin
    assert f'href="/dna/{record["dna"]}"' in html


def test_dna_page_lists_twins_family_and_stability_with_a_strip_plot(
    client: TestClient, ui_store: UiStore
) -> None:
    html = client.get(f"/dna/{ui_store.seed_dna[:8]}").text
    assert "Twins (2)" in html and "(6 runs across seeds)" in html
    stats = cli_json(ui_store, "stability", ui_store.seed_dna[:8])["metrics"]["final_loss"]
    assert f'<td class="num">{stats["mean"]:.6g}</td>' in html
    family = cli_json(ui_store, "stability", ui_store.seed_dna[:8], "--across-seeds")
    assert f'<td class="num">{family["metrics"]["reward"]["mean"]:.6g}</td>' in html
    assert html.count('<svg class="strip"') == 4  # two metrics, for the DNA and the family
    assert html.count('<circle class="dot"') == 2 * 2 + 2 * 6


def test_diff_page_shows_section_digests_then_changes(
    client: TestClient, ui_store: UiStore
) -> None:
    a, b = ui_store.seeds[0], ui_store.seeds[2]
    html = client.get("/diff", params={"a": a, "b": b}).text
    report = cli_json(ui_store, "diff", a, b)
    assert '<tr class="differ"><td>config</td>' in html
    assert '<tr class="same"><td>hardware</td>' in html
    for change in report["changes"]:
        details = "".join(f"<li>{d['path']}: " for d in change["details"])
        shown = f'<ul class="details">{details}' if details else "</td>"
        assert f'<td class="mono">{change["path"]}{shown}' in html.replace("</li>", "")
    assert "(differ)" in html
    assert client.get("/diff").status_code == 200  # the empty form


def test_fleet_counts_each_value_and_links_to_its_runs(
    client: TestClient, ui_store: UiStore
) -> None:
    html = client.get("/find").text
    rare = len(cli_json(ui_store, "find", "--vbios", RARE_VBIOS))
    assert rare == SIZE // 100
    assert (
        f'<a href="/find?vbios={RARE_VBIOS}">{RARE_VBIOS}</a></td><td class="num">{rare}<' in html
    )
    found = client.get("/find", params={"vbios": RARE_VBIOS}).text
    assert len(re.findall(r'<a href="/runs/([^"]+)">', found)) == min(rare, 200)


def test_checkpoint_and_lineage_pages(client: TestClient, ui_store: UiStore) -> None:
    by_name = client.get(f"/checkpoints/{quote(PIN_NAME, safe='')}")
    assert by_name.status_code == 200 and ui_store.seeds[4] in by_name.text
    by_digest = client.get(f"/checkpoints/blake3:{ui_store.pin_digest}")
    assert by_digest.status_code == 200 and ui_store.seeds[4] in by_digest.text
    graph = client.get(f"/lineage/{ui_store.seeds[2]}").text
    assert graph.count('<rect class="node') == 3 and graph.count('<line class="edge"') == 2
    assert "resumed_from" in graph and "derived_from" in graph


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("/runs/20990101_000000_0000000_none", 404, "no recorded run"),
        ("/dna/ffffffffffff", 404, "no recorded run has a DNA starting with"),
        ("/dna/abc", 400, "too short"),
        ("/?where=bad", 400, "expected PATH=VALUE"),
        ("/?since=yesterday", 400, "is not an ISO 8601 date"),
        ("/?page=0", 400, "expected a whole number"),
        ("/diff?a=only", 400, "give two runs"),
        ("/checkpoints/no-such.pth", 404, "no recorded run pinned"),
        ("/checkpoints/blake3:abc", 400, "not a digest"),
        ("/no/such/page", 404, "no such page"),
    ],
)
def test_errors_are_pages_and_json_with_the_cli_message(
    client: TestClient, url: str, status: int, message: str
) -> None:
    page = client.get(url)
    assert page.status_code == status and message in page.text
    assert page.headers["content-type"].startswith("text/html")
    if url.startswith(("/runs/", "/?", "/dna/", "/checkpoints")):
        api = client.get("/api" + url.replace("/?", "/runs?", 1))
        assert api.status_code == status and message in api.json()["error"]


def test_a_bad_where_says_what_the_cli_says(client: TestClient, ui_store: UiStore) -> None:
    cli = invoke(ui_store.root, "runs", "--where", "bad")
    assert cli.exit_code == 2
    assert client.get("/api/runs?where=bad").json()["error"] in cli.stderr


def test_every_response_carries_the_security_headers_and_nothing_writes(
    client: TestClient, ui_store: UiStore
) -> None:
    before = {p: p.stat().st_mtime_ns for p in ui_store.root.rglob("*") if p.is_file()}
    for url in ("/", "/static/expdna.css", "/api/runs", "/no/such"):
        headers = client.get(url).headers
        assert "default-src 'none'" in headers["content-security-policy"]
        assert "script-src" not in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
    for method in ("post", "put", "delete", "patch"):
        assert getattr(client, method)("/api/runs").status_code == 405
        assert getattr(client, method)("/").status_code == 405
    after = {p: p.stat().st_mtime_ns for p in ui_store.root.rglob("*") if p.is_file()}
    assert before == after


def test_no_url_reaches_the_filesystem(
    client: TestClient, ui_store: UiStore, tmp_path: Path
) -> None:
    secret = tmp_path / "checkpoint.pth"
    secret.write_bytes(b"weights")
    # which() would hash a file at this path; the page looks it up as a name only.
    assert client.get(f"/checkpoints/{quote(str(secret), safe='')}").status_code == 404
    assert client.get("/api/diff", params={"a": str(secret), "b": str(secret)}).status_code == 400
    assert client.get("/static/../index.sqlite").status_code == 404


def test_hostile_manifest_values_are_escaped_text(client: TestClient, ui_store: UiStore) -> None:
    for url in (f"/runs/{ui_store.hostile}", "/", "/find"):
        html = client.get(url).text
        assert "<script" not in html and "<img" not in html
        assert str(escape(IMG)) in html
    run = client.get(f"/runs/{ui_store.hostile}").text
    assert str(escape(SCRIPT)) in run and "+" + str(escape(SCRIPT)) in run  # the patch line


# --- the API: the CLI's shapes ---------------------------------------------------------------


def test_api_answers_equal_the_cli_json(client: TestClient, ui_store: UiStore) -> None:
    seed, twin, prefix = ui_store.seeds[0], ui_store.seeds[2], ui_store.seed_dna[:8]
    pairs = [
        ("/api/runs?limit=20", ("runs", "--limit", "20")),
        (f"/api/runs?where=hardware.driver_version={DRIVERS[1]}&limit=500",
         ("runs", "--where", f"hardware.driver_version={DRIVERS[1]}", "--limit", "500")),
        (f"/api/runs/{seed}", ("show", seed)),
        (f"/api/dna/{prefix}", ("twins", prefix)),
        (f"/api/dna/{prefix}?across_seeds=true", ("twins", prefix, "--across-seeds")),
        (f"/api/stability/{prefix}", ("stability", prefix)),
        (f"/api/stability/{prefix}?across_seeds=1", ("stability", prefix, "--across-seeds")),
        (f"/api/diff?a={seed}&b={twin}", ("diff", seed, twin)),
        (f"/api/find?vbios={RARE_VBIOS}&driver={DRIVERS[0]}",
         ("find", "--vbios", RARE_VBIOS, "--driver", DRIVERS[0])),
        (f"/api/lineage/{twin}", ("lineage", twin)),
        (f"/api/checkpoints/blake3:{ui_store.pin_digest}",
         ("which", f"blake3:{ui_store.pin_digest}")),
    ]  # fmt: skip
    for url, args in pairs:
        response = client.get(url)
        assert response.status_code == 200, (url, response.text)
        assert response.json() == cli_json(ui_store, *args), url
    manifest = client.get(f"/api/runs/{seed}/manifest").json()
    shown = invoke(ui_store.root, "show", seed, "--manifest")
    assert manifest == json.loads(shown.stdout)


def test_api_fleet_counts_match_find(client: TestClient, ui_store: UiStore) -> None:
    fleet = client.get("/api/fleet").json()
    drivers = {row["value"]: row["runs"] for row in fleet["driver"]}
    for driver in DRIVERS[:3]:
        assert drivers[driver] == len(cli_json(ui_store, "find", "--driver", driver))
    assert sum(row["runs"] for row in fleet["gpu"]) == SIZE + 8


# --- the command -----------------------------------------------------------------------------


def test_ui_without_the_extra_is_one_line_and_exit_2(ui_store: UiStore) -> None:
    code = (
        "import sys; sys.modules['starlette'] = None; from expdna.cli import main;"
        f"sys.argv = ['expdna', '--store', {str(ui_store.root)!r}, 'ui']; main()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "expdna: error: expdna ui needs the ui extra (starlette not installed): "
        "pip install 'expdna[ui]'"
    ]


def test_ui_on_a_missing_store_is_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [EXPDNA, "--store", str(tmp_path / "none"), "ui"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "no store at" in done.stderr
    assert not (tmp_path / "none").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ui_serves_over_http_and_warns_off_loopback(ui_store: UiStore) -> None:
    port = _free_port()
    env = {**os.environ, "EXPDNA_STORE": str(ui_store.root)}
    server = subprocess.Popen(
        [EXPDNA, "ui", "--host", "0.0.0.0", "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        body = b""
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/fleet") as response:
                    body = response.read()
                break
            except OSError:
                time.sleep(0.1)
        assert json.loads(body)["driver"]
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert "expdna: warning: binding 0.0.0.0: the page is reachable from other machines" in err


def test_a_large_group_is_a_box_plot_not_a_dot_per_run(tmp_path: Path) -> None:
    from expdna.store import Store
    from expdna.store.config import StoreConfig
    from expdna.ui.app import create_app
    from tests.factories import manifest_of, synthetic_doc

    docs = []
    for i in range(101):
        doc = synthetic_doc(i, setup=0)
        doc["metrics"] = {"loss": 1.0 + i / 100}
        docs.append(doc)
    with Store.open(tmp_path / "s") as store:
        store.record_many([manifest_of(d) for d in docs])
        prefix = store.runs(limit=1)[0].dna[:12]
    with TestClient(
        create_app(StoreConfig(path=tmp_path / "s")), base_url="http://localhost"
    ) as client:
        html = client.get(f"/dna/{prefix}").text
    assert html.count('<g class="quartiles">') == 2  # the DNA and its family
    assert '<circle class="dot"' not in html and "101 runs: min, quartiles, max" in html


def test_run_page_names_the_mlflow_and_wandb_runs_and_links_only_an_http_server(
    tmp_path: Path,
) -> None:
    from expdna.store import Store
    from expdna.store.config import StoreConfig
    from expdna.ui.app import create_app
    from tests.factories import manifest_of, synthetic_doc

    tied = synthetic_doc(1)
    tied["tracking"] = {
        "mlflow": {"run_id": "abc123", "experiment_id": "7", "tracking_uri": "http://mlf:5000/"},
        "wandb": {"run_id": "w1x2y3z4", "project": "vit"},
    }
    hostile = synthetic_doc(2)
    hostile["tracking"] = {
        "mlflow": {"run_id": "r9", "experiment_id": "1", "tracking_uri": "javascript:alert(1)"},
    }
    with Store.open(tmp_path / "s") as store:
        results = store.record_many([manifest_of(tied), manifest_of(hostile)])
    ids = [r.run_id for r in results]
    with TestClient(
        create_app(StoreConfig(path=tmp_path / "s")), base_url="http://localhost"
    ) as client:
        page = client.get(f"/runs/{ids[0]}").text
        other = client.get(f"/runs/{ids[1]}").text
    assert '<a href="http://mlf:5000/#/experiments/7/runs/abc123">abc123</a>' in page
    assert "w1x2y3z4 (vit)" in page
    assert "r9 (javascript:alert(1))" in other and 'href="javascript:' not in other


def test_dna_page_pools_completed_runs_unless_asked(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from expdna.store import Store
    from expdna.store.config import StoreConfig
    from expdna.ui.app import create_app
    from tests.factories import dna, manifest_of, seed_doc

    started = {"state": "running", "started_at": "2026-08-07T00:00:00Z"}
    docs = [seed_doc(70_000 + k, final_loss=1.0 + k) for k in range(3)]
    docs[1]["status"] = {**started, "state": "completed"}
    docs[2]["status"] = {**started, "state": "failed", "exit_code": 1}
    root = tmp_path / "store"
    with Store.open(root) as store:
        store.record_many([manifest_of(d) for d in docs])
    prefix = dna(manifest_of(docs[0]))[:8]
    with TestClient(create_app(StoreConfig(path=root)), base_url="http://localhost") as client:
        html = client.get(f"/dna/{prefix}").text
        # the run of unknown state (no status) and the completed one: mean 1.5
        assert "1 not completed left out" in html and '<td class="num">1.5</td>' in html
        wide = client.get(f"/dna/{prefix}", params={"include_failed": "1"}).text
        assert "every state pooled" in wide and '<td class="num">2</td>' in wide
