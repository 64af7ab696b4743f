"""The docs show real output: rerun every transcript and compare each page's blocks with it.

The transcripts (``docs/tools/pages.py --list``: the guide's, the integration pages', the
frameworks', …) run once per test session, side by side as ``docs/tools/regen.sh`` runs
them, each in a demo directory of its own under a temporary directory. Every page block
filled from one (``<!-- out:NAME -->``, English and Chinese) must equal its output once the
values that differ between two honest runs are normalised (:data:`_NORMAL`: run ids,
times, digests and DNA values, durations, sizes, ports, versions, the machine's own facts).
Only values are normalised: a line more or less, another field, another word fails. The
blocks an opt-in run makes (``recorded=DATE``: benchmarks, the Ray cluster) are not
compared, and :data:`MACHINE` lists, each with its reason, the few blocks whose output *is*
this machine (its CPU flags, its installed packages): of those only the commands and exit
statuses are compared. After a change of output, ``sh docs/tools/regen.sh`` refreshes
every page.

No block of real output goes unmarked: each shell block that shows what a command printed
carries a marker (``out:NAME``, made by the transcript that fills its page, or
``recorded:DATE`` / ``recorded=DATE``, which the site shows as not rerun), read without
running anything.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "docs" / "tools"
sys.path.insert(0, str(TOOLS))
import fill_docs  # noqa: E402
import pages  # noqa: E402

#: The blocks that show this machine itself (or its speed), compared by their commands and
#: exit statuses only: a CPU flag more, a package more or newer, another kernel or CPU model
#: changes the number of lines, not just values (the docs were made on one machine, CI runs
#: on another).
MACHINE: dict[str, str] = {
    "quickstart-manifest": "the whole manifest: this machine's packages, kernel, CPU",
    "col-env": "the installed packages",
    "col-env-listing": "the installed packages, one a line",
    "col-plugin-run": "this CPU's flags",
    "col-plugin-diff": "this CPU's flags, as a diff",
    "col-gpu-csv": "a recorded GPU, on this machine's CPU and packages",
    "col-gpu-dna": "the hardware projection: this CPU's flags",
    "col-ray": "the resources Ray finds on this machine",
    "torchrun-runtime": "the node fingerprints: this CPU and memory",
    "big-check": "the size of a manifest, which lists this machine's packages",
    # How fast this machine ran: a file younger than the digest cache's racy window is not
    # cached, and under load the demo's data is older by the time it is digested.
    "col-cache-racy": "the digest cache's rows: how old the files were when digested",
    "col-cache-steady": "the digest cache's rows: how old the files were when digested",
}
#: What may differ between two honest runs of the same code, value by value.
_NORMAL: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), token)
    for pattern, token in (
        # run ids, also inside file names (manifest_<run id>.json)
        (r"(?<![0-9])\d{8}_\d{6}_[0-9a-z]+_[0-9a-z]{4}(?![0-9a-z])", "<run>"),
        (r"(?<![0-9A-Za-z])[0-9a-f]{12,64}(?![0-9A-Za-z])", "<hex>"),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "<time>"),
        (r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}", "<time>"),  # logging's
        (r"\b\d{8}T\d{12}Z", "<time>"),  # log entry names
        # W&B's offline runs and their ids
        (r"\b\d{8}_\d{6}-[0-9a-z]{8}\b", "<tracker-run>"),
        (r"('run_id': ')[0-9a-z]{8}'", r"\1<tracker-run>'"),
        # durations and sizes
        (r"\b\d+(\.\d+)?( ?(?:s|ms|us|µs|MiB|KiB|GiB|KB|MB|B))\b", r"<n>\2"),
        # ports chosen free, memory and this machine's facts
        (r"(--master-port |--port |127\.0\.0\.1:|localhost:)\d+", r"\1<port>"),
        # the fan-out directory of an object named by a run's own digest
        (r"\b(objects/)[0-9a-f]{2}\b", r"\1<hex>"),
        (
            r'("(?:cpu_model|cpu_microcode|kernel|hostname|memory|memory_bytes)": )'
            r'("[^"]*"|[\d.e+]+)',
            r"\1<machine>",
        ),
        # versions (packages, Python) and package counts: what is installed
        (r"\b\d+(\.\d+){2,}([+.-]?[0-9A-Za-z]+)*", "<version>"),
        (r"\b\d+ (equal|PASS\)|more\))", r"<n> \1"),
    )
)
#: Fields whose every number is a duration or a size ("duration_ms": 0.17, a diff's
#: "status.duration_s: 3.009 -> 0.359").
_MEASURED = re.compile(r"\b(duration_(?:ms|s)|peak_rss_bytes)\b(.*)")
_NUMBER = re.compile(r"\d+(\.\d+)?")
_FLOAT = re.compile(r"(?<![\d:.])\d+\.\d{5,}")
_PROGRESS = re.compile(r"^reindex: \d+/\d+ runs$")
_SPACES = re.compile(r"(?<=\S) {2,}")


def normalised(lines: list[str], demo: dict[str, str]) -> list[str]:
    """``lines`` with the demo's paths (``demo``: path -> what pages show) and values masked.

    Floating-point results (losses, their statistics) keep four significant digits: another
    CPU rounds the last ones differently. Runs of spaces inside a line are one: a masked
    value of another width moves the columns after it. Of a run of ``reindex`` progress
    lines only the last is kept.
    """
    out = []
    for i, line in enumerate(lines):
        if _PROGRESS.match(line) and i + 1 < len(lines) and _PROGRESS.match(lines[i + 1]):
            continue  # a progress line printed once a second: how many depends on the load
        for path, shown in demo.items():
            line = line.replace(path, shown)
        line = _MEASURED.sub(lambda m: m[1] + _NUMBER.sub("<n>", m[2]), line)
        line = _FLOAT.sub(lambda m: f"{float(m[0]):.4g}", line)
        for pattern, token in _NORMAL:
            line = pattern.sub(token, line)
        out.append(_SPACES.sub(" ", line))
    return out


def commands(lines: list[str]) -> list[str]:
    """A machine block's commands and exit statuses."""
    return [ln for ln in lines if ln.startswith(("$ ", "[exit "))]


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


class Run(NamedTuple):
    """One transcript's blocks, and what its paths are shown as on the pages."""

    blocks: dict[str, list[str]]
    shown: dict[str, str]
    seconds: float


@pytest.fixture(scope="session")
def transcripts() -> Iterator[dict[str, Run]]:
    """Every transcript, run side by side once per session, as regen.sh runs them.

    Each runs in a short directory straight under /tmp, as regen.sh's /tmp/expdna-*: the
    commands cut values over 60 characters (``expdna diff``), so a demo path under pytest's
    deeper temporary directory would be shown cut where the page shows it whole.
    """
    root = Path(tempfile.mkdtemp(prefix="docs-", dir="/tmp"))
    try:
        yield _run_all(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run_all(root: Path) -> dict[str, Run]:
    database = f"expdna_docs_{uuid.uuid4().hex[:8]}"
    venv = str(Path(sys.executable).parent)
    started = {}
    for name, (script, variable, shown) in pages.TRANSCRIPTS.items():
        # As regen.sh's clean(): nothing of the caller's environment but these.
        env = {
            "HOME": os.environ.get("HOME", str(root)),
            "PATH": f"{venv}{os.pathsep}{os.environ.get('PATH', '')}",
            "LANG": "C.UTF-8",
            "TMPDIR": str(root),
            variable: str(root / Path(shown).name),
            "EXPDNA_DOCS_PG_DB": database,
        }
        out = (root / f"{name}.txt").open("w", encoding="utf-8")
        err = (root / f"{name}.err").open("w", encoding="utf-8")
        process = subprocess.Popen(["sh", str(TOOLS / script)], env=env, stdout=out, stderr=err)
        started[name] = (process, time.monotonic(), out, err)
    runs = {}
    try:
        for name, (process, began, out, err) in started.items():
            code = process.wait(timeout=1200)
            out.close()
            err.close()
            assert code == 0, (root / f"{name}.err").read_text(encoding="utf-8")[-3000:]
            shown = pages.TRANSCRIPTS[name][2]
            runs[name] = Run(
                fill_docs.read_blocks(str(root / f"{name}.txt")),
                {str(root / Path(shown).name): shown, database: "expdna_guide"},
                time.monotonic() - began,
            )
    finally:
        for process, *_ in started.values():
            if process.poll() is None:
                process.kill()
        # The databases the transcripts made (the integration pages', the team set-up's).
        for name in (database, f"{database}_team"):
            drop = ["psql", "-q", "-h", "127.0.0.1", "-U", "postgres", "-c"]
            if shutil.which("psql"):
                subprocess.run([*drop, f"DROP DATABASE IF EXISTS {name}"], capture_output=True)
    return runs


def compared(transcripts: dict[str, Run]) -> list[tuple[str, str, list[str], list[str]]]:
    """``(page, block, shown, fresh)`` for every block a transcript fills, normalised."""
    found = []
    for name, run in transcripts.items():
        for page in pages.pages(name):
            for mark, body in documented(page):
                if mark["on"]:
                    continue  # recorded=DATE: only an opt-in run makes it
                # As fill_docs writes it: head=N / tail=M shorten a long block the same way.
                fresh = fill_docs.body_for(mark, run.blocks) or []
                if mark["name"] in MACHINE:
                    body, fresh = commands(body), commands(fresh)
                found.append(
                    (
                        str(page.relative_to(REPO)),
                        mark["name"],
                        normalised(body, {}),
                        normalised(fresh, run.shown),
                    )
                )
    return found


def test_documented_outputs_match_a_fresh_run(transcripts: dict[str, Run]) -> None:
    results = compared(transcripts)
    stale = [
        (f"{page}: {name}", shown, fresh) for page, name, shown, fresh in results if shown != fresh
    ]
    # Each stale block, and how the first ones differ (page -> fresh run, normalised).
    diffs = [
        "\n".join(difflib.unified_diff(shown, fresh, where, "fresh run", lineterm="", n=1))
        for where, shown, fresh in stale[:8]
    ]
    assert stale == [], (
        "stale blocks (run sh docs/tools/regen.sh): "
        + ", ".join(where for where, *_ in stale)
        + "\n"
        + "\n".join(diffs)
    )
    assert len(results) > 300  # every page of every transcript, English and Chinese


def test_no_documented_command_failed_to_start(transcripts: dict[str, Run]) -> None:
    # A missing tool (b3sum, a venv command) would be compared as output, and fail late.
    missing = [
        f"{name}: {block}: {line}"
        for name, run in transcripts.items()
        for block, lines in run.blocks.items()
        for line in lines
        if re.search(r": \d+: .*: not found$|^ModuleNotFoundError", line)
    ]
    assert missing == []


def test_a_changed_output_fails(transcripts: dict[str, Run]) -> None:
    # The comparison keeps shapes: a line dropped or a word changed is not normalised away.
    guide = transcripts["guide"]
    block = guide.blocks["diff-lr"]
    fresh = normalised(block, guide.shown)
    assert normalised(block[:-2] + block[-1:], guide.shown) != fresh
    assert normalised([ln.replace("INFO", "WARN") for ln in block], guide.shown) != fresh
    verdict = ["verdict: FAIL (2 FAIL, 0 WARN, 164 PASS)"]
    assert normalised(verdict, {}) != normalised(["verdict: FAIL (3 FAIL, 0 WARN, 163 PASS)"], {})
    progress = ["reindex: 1/3 runs", "reindex: 3/3 runs"]
    assert normalised(progress, {}) == normalised(progress[1:], {}) != normalised(progress[:1], {})
    assert normalised(["  duration_ms 40.81", "in 1.7 s"], {}) == normalised(
        ["  duration_ms 592.49", "in 11.2 s"], {}
    )


#: Each transcript's scripts (with the ones it sources): their ``block NAME`` lines.
_SCRIPTS = {
    name: (script, "config_demo.sh") if name == "guide" else (script,)
    for name, (script, _, _) in pages.TRANSCRIPTS.items()
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
