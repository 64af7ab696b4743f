"""The docs show real output: rerun the guide's first commands and compare with the pages.

``docs/tools/transcript.sh`` (quick mode: the demo, ``generate``, ``diff``) runs the real
commands; every page block filled from it (``<!-- out:NAME -->``, English and Chinese) must
equal that output once run ids, times, digests and DNA values are normalised. Only values are
normalised: a line more or less, another field, another word fails. After a change of
output, ``sh docs/tools/regen.sh`` refreshes every page.

No block of real output goes unmarked: each shell block that shows what a command printed
carries a marker (``out:NAME``, made by the transcript that fills its page, or
``recorded:DATE`` / ``recorded=DATE``, which the site shows as not rerun), read without
running anything.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "docs" / "tools"
sys.path.insert(0, str(TOOLS))
import fill_docs  # noqa: E402
import pages  # noqa: E402

#: The blocks quick mode makes whose output depends on nothing of this machine.
CHECKED = ("gen-a", "gen-a2", "gen-b", "diff-equal", "diff-lr", "diff-json")
#: What may differ between two honest runs: where, when, and the hashes of what was made.
_NORMAL = (
    (re.compile(r"\b\d{8}_\d{6}_[0-9a-z]+_[0-9a-z]{4}\b"), "<run>"),
    (re.compile(r"\b[0-9a-f]{12,64}\b"), "<hex>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "<time>"),
)


def normalised(lines: list[str], demo: str) -> list[str]:
    out = []
    for line in lines:
        line = line.replace(demo, "<demo>")
        for pattern, token in _NORMAL:
            line = pattern.sub(token, line)
        out.append(line)
    return out


def documented(page: Path) -> list[tuple[re.Match[str], list[str]]]:
    """``(marker, the lines of its block)`` on one page, read with fill_docs' own marker."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found = []
    for i, line in enumerate(lines):
        mark = fill_docs.MARK.match(line)
        if mark and mark["name"] and i + 1 < len(lines) and lines[i + 1].lstrip().startswith("```"):
            end = i + 2
            while not lines[end].lstrip().startswith("```"):
                end += 1
            indent = len(mark["indent"])
            found.append((mark, [ln[indent:] for ln in lines[i + 2 : end]]))
    return found


@pytest.fixture(scope="module")
def transcript(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, list[str]], str]:
    demo = tmp_path_factory.mktemp("docs") / "demo"
    env = {**os.environ, "EXPDNA_DOCS_DEMO": str(demo), "EXPDNA_DOCS_QUICK": "1"}
    env.pop("EXPDNA_STORE", None)
    env.pop("EXPDNA_INDEX_URL", None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        ["sh", str(REPO / "docs/tools/transcript.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    path = demo.parent / "transcript.txt"
    path.write_text(done.stdout, encoding="utf-8")
    return fill_docs.read_blocks(str(path)), str(demo)


def test_documented_outputs_match_a_fresh_run(transcript: tuple[dict[str, list[str]], str]) -> None:
    blocks, demo = transcript
    assert set(CHECKED) <= set(blocks), sorted(blocks)
    compared = 0
    for page in pages.pages("guide"):
        for mark, body in documented(page):
            name = mark["name"]
            if name not in CHECKED:
                continue
            # As fill_docs writes it: head=N / tail=M shorten a long block the same way.
            fresh = normalised(fill_docs.body_for(mark, blocks) or [], demo)
            shown = normalised(body, "/tmp/demo")
            assert shown == fresh, f"{page}: block {name} is stale; run sh docs/tools/regen.sh"
            compared += 1
    assert compared >= 2 * len(CHECKED)  # each block, in English and Chinese


def test_a_changed_output_fails(transcript: tuple[dict[str, list[str]], str]) -> None:
    # The comparison keeps shapes: a line dropped or a word changed is not normalised away.
    blocks, demo = transcript
    fresh = normalised(blocks["diff-lr"], demo)
    assert normalised(blocks["diff-lr"][:-2] + blocks["diff-lr"][-1:], demo) != fresh
    assert normalised([ln.replace("INFO", "WARN") for ln in blocks["diff-lr"]], demo) != fresh


#: Each transcript's scripts (with the ones it sources): their ``block NAME`` lines.
_SCRIPTS = {
    "guide": ("transcript.sh", "config_demo.sh"),
    "integration": ("integration_transcript.sh",),
    "frameworks": ("frameworks_transcript.sh",),
}
#: Markers that say where a block comes from: fill_docs' own, and integration_transcript's
#: ``code:NAME`` (a script the page shows and the transcript runs).
_CODE = re.compile(r"^ *<!-- code:[\w.]+ -->$")


def made_by(transcript: str) -> set[str]:
    names: set[str] = set()
    for script in _SCRIPTS[transcript]:
        names |= set(re.findall(r"\bblock ([\w-]+)", (TOOLS / script).read_text("utf-8")))
    return names


def fenced(page: Path) -> list[tuple[int, str, list[str]]]:
    """``(line number, the line before the fence, the block's lines)`` of every fence."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found = []
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("```"):
            end = i + 1
            while end < len(lines) and not lines[end].lstrip().startswith("```"):
                end += 1
            found.append((i + 1, lines[i - 1] if i else "", lines[i + 1 : end]))
            i = end
        i += 1
    return found


def shows_output(body: list[str]) -> bool:
    """A shell block with real output: a ``$ `` command followed by a line it printed."""
    command = continued = False
    for line in body:
        text = line.strip()
        if text.startswith("$ "):
            command, continued = True, text.endswith("\\")
        elif continued:
            continued = text.endswith("\\")
        elif command and text and not text.startswith("#"):
            return True
    return False


def all_pages() -> dict[str, list[Path]]:
    return {name: pages.pages(name) for name in _SCRIPTS}


def test_every_block_of_real_output_is_marked() -> None:
    unmarked = [
        f"{page.relative_to(REPO)}:{number}"
        for found in all_pages().values()
        for page in found
        for number, before, body in fenced(page)
        if shows_output(body) and not (fill_docs.MARK.match(before) or _CODE.match(before))
    ]
    assert unmarked == [], (
        "blocks of real output without a marker (docs/tools/README.md): " + ", ".join(unmarked)
    )


def test_each_filled_block_is_made_by_its_pages_transcript() -> None:
    # fill_docs keeps a block its transcript lacks as it was: such a block is never refreshed.
    orphans = []
    for transcript, found in all_pages().items():
        names = made_by(transcript)
        for page in found:
            for mark, _ in documented(page):
                if mark["name"] not in names:
                    orphans.append(f"{page.relative_to(REPO)}: out:{mark['name']}")
    assert orphans == [], "blocks no transcript makes: " + ", ".join(orphans)


def test_the_markers_are_told_apart() -> None:
    # A recorded block is never refilled; an opt-in one keeps its date until it is rerun.
    assert fill_docs.MARK.match("<!-- recorded:2026-12-01 -->")["recorded"] == "2026-12-01"
    opt_in = fill_docs.MARK.match("<!-- out:bench-data recorded=2026-12-01 -->")
    assert opt_in["name"] == "bench-data" and opt_in["on"] == "2026-12-01"
    assert fill_docs.body_for(fill_docs.MARK.match("<!-- recorded:2026-12-01 -->"), {}) is None
    assert not shows_output(["$ pip install expdna", "$ expdna --help  # all commands"])
    assert not shows_output(["$ expdna generate \\", "    -o m.json"])
    assert shows_output(["$ expdna fsck", "checked 5 objects"])
