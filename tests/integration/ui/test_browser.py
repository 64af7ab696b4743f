"""End to end in Debian's Chromium: every page opens without a console error (a CSP
violation is one), links lead where they say, the runs table filters, and a hostile
manifest stays text. Screenshots of each page are saved in the test's temp dir."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.history import DRIVERS, RARE_VBIOS
from tests.integration.ui.browser import chromium, serving
from tests.integration.ui.conftest import IMG, PIN_NAME, SCRIPT, UiStore

#: Most bytes one page may weigh (HTML and stylesheet): the issue's budget.
PAGE_WEIGHT = 200 * 1024


@pytest.fixture(scope="module")
def base(ui_store: UiStore) -> Iterator[str]:
    with serving(ui_store.config) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


class Watched:
    """A page that records console errors, script errors, dialogs and bytes received."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.problems: list[str] = []
        self.dialogs: list[str] = []
        self.bytes = 0
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.problems.append(f"page error: {exc}"))
        page.on("dialog", self._dialog)
        page.on("response", self._response)

    def _console(self, message: object) -> None:
        if getattr(message, "type", "") in ("error", "warning"):
            self.problems.append(f"console: {getattr(message, 'text', '')}")

    def _dialog(self, dialog: object) -> None:
        self.dialogs.append(getattr(dialog, "message", ""))
        dialog.dismiss()  # type: ignore[attr-defined]

    def _response(self, response: object) -> None:
        body = response.body()  # type: ignore[attr-defined]
        self.bytes += len(body)

    def open(self, url: str) -> None:
        self.bytes = 0
        response = self.page.goto(url)
        assert response is not None and response.status == 200, url
        self.page.wait_for_load_state("load")


@pytest.fixture
def watched(browser: Browser) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        yield Watched(page)
    finally:
        context.close()


def test_every_page_opens_clean_light_and_styled(
    watched: Watched, base: str, ui_store: UiStore, tmp_path: Path
) -> None:
    pages = {
        "runs": "/",
        "run": f"/runs/{ui_store.seeds[4]}",
        "dna": f"/dna/{ui_store.seed_dna[:12]}",
        "diff": f"/diff?a={ui_store.seeds[0]}&b={ui_store.seeds[2]}",
        "fleet": "/find",
        "find": f"/find?vbios={RARE_VBIOS}",
        "checkpoint": f"/checkpoints/{quote(PIN_NAME, safe='')}",
        "lineage": f"/lineage/{ui_store.seeds[2]}",
    }
    for name, path in pages.items():
        watched.open(base + path)
        assert watched.bytes < PAGE_WEIGHT, (name, watched.bytes)
        # The stylesheet applied (no inline style is allowed, so this is the static file).
        colour = watched.page.eval_on_selector(
            "header.top", "e => getComputedStyle(e).backgroundColor"
        )
        assert colour == "rgb(29, 35, 41)", name
        watched.page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
        assert (tmp_path / f"{name}.png").stat().st_size > 5000
    assert watched.problems == []
    assert watched.dialogs == []


def test_links_lead_from_runs_to_a_run_its_dna_a_diff_and_back(
    watched: Watched, base: str, ui_store: UiStore
) -> None:
    page = watched.page
    watched.open(f"{base}/?dna={ui_store.seed_dna[:10]}")
    page.get_by_role("link", name=ui_store.seeds[1]).click()
    expect(page).to_have_url(f"{base}/runs/{ui_store.seeds[1]}")
    expect(page.locator("h1")).to_contain_text(ui_store.seeds[1])
    page.get_by_role("link", name="twins and stability").click()
    expect(page).to_have_url(re.compile(f"/dna/{ui_store.seed_dna}$"))
    expect(page.locator("svg.strip").first).to_be_visible()
    page.get_by_role("link", name=ui_store.seeds[0]).first.click()
    page.get_by_role("link", name=f"compare with {ui_store.seeds[1]}").click()
    expect(page.locator("p.verdict")).to_contain_text("(equal)")
    page.get_by_label("B").fill(ui_store.seeds[4])
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("p.verdict")).to_contain_text("(differ)")
    expect(page.locator("table.changes")).to_contain_text("config.resolved_args.seed")
    page.get_by_role("link", name="Runs").click()
    expect(page).to_have_url(f"{base}/")
    assert watched.problems == []


def test_the_fleet_links_to_every_run_on_a_vbios_and_a_checkpoint_to_its_run(
    watched: Watched, base: str, ui_store: UiStore
) -> None:
    page = watched.page
    watched.open(f"{base}/find")
    page.get_by_role("link", name=RARE_VBIOS).click()
    expect(page).to_have_url(f"{base}/find?vbios={RARE_VBIOS}")
    expect(page.locator("table.runs tbody tr")).to_have_count(50)
    watched.open(f"{base}/runs/{ui_store.seeds[4]}")
    page.get_by_role("link", name=PIN_NAME).click()
    expect(page.locator("h1")).to_contain_text(PIN_NAME)
    page.get_by_role("link", name=ui_store.seeds[4]).click()
    page.get_by_role("link", name="lineage").click()
    expect(page.locator("svg.graph rect.node")).to_have_count(3)
    page.locator("svg.graph a").first.click()  # the graph's nodes are links too
    expect(page).to_have_url(f"{base}/lineage/{ui_store.seeds[0]}")
    assert watched.problems == []


def test_filtering_the_runs_table(watched: Watched, base: str) -> None:
    page = watched.page
    watched.open(base + "/")
    expect(page.locator("table.runs tbody tr")).to_have_count(50)
    page.get_by_label("where").fill(f"hardware.driver_version={DRIVERS[7]}")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"where=hardware\.driver_version%3D550\.61\.07"))
    rows = page.locator("table.runs tbody tr")
    expect(rows).to_have_count(50)
    for text in rows.locator("td:nth-child(6)").all_inner_texts():
        assert text == DRIVERS[7]
    page.get_by_role("link", name="older →").click()
    expect(page.locator("nav.pages")).to_contain_text("page 2")
    page.get_by_label("since").fill("2026-08-07")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("p.empty")).to_have_text("no runs match")
    page.get_by_label("where").fill("no-equals-sign")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("p.error")).to_contain_text("expected PATH=VALUE")
    assert [p for p in watched.problems if "400" not in p] == []


def test_a_hostile_manifest_renders_as_text(watched: Watched, base: str, ui_store: UiStore) -> None:
    page = watched.page
    for path in (f"/runs/{ui_store.hostile}", "/", "/find"):
        watched.open(base + path)
        assert page.locator("img").count() == 0
        assert page.locator("main script").count() == 0
    watched.open(f"{base}/runs/{ui_store.hostile}")
    text = page.locator("main").inner_text()
    assert SCRIPT in text and IMG in text
    assert f"+{SCRIPT}" in page.locator("pre.patch").inner_text()
    watched.open(base + "/find")
    assert IMG in page.locator("main").inner_text()
    assert watched.dialogs == []
    assert watched.problems == []
