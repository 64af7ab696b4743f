"""The docs show real output: rerun the guide's first commands and compare with the pages.

``docs/tools/transcript.sh`` (quick mode: the demo, ``generate``, ``diff``) runs the real
commands; every page block filled from it (``<!-- out:NAME -->``, English and Chinese) must
equal that output once run ids, times, digests and DNA values are normalised. Only values are
normalised: a line more or less, another field, another word fails. After a change of
output, ``sh docs/tools/regen.sh`` refreshes every page.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "docs" / "tools"))
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
