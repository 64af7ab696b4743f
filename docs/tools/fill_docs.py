"""Refill the real-output blocks of the docs from a transcript (see transcript.sh).

Every fenced block that shows real output is marked by an HTML comment on the line before
its fence (tests/integration/test_docs_outputs.py fails on one that is not):

    <!-- out:NAME -->                 the whole transcript block NAME
    <!-- out:NAME head=N -->          its first N lines, "…", and its "[exit N]" line
    <!-- out:NAME head=N tail=M -->   its first N lines, "…", and its last M lines
    <!-- out:NAME recorded=DATE -->   a block only an opt-in run makes (the benchmarks, the
                                      Ray cluster): filled, and DATE set to today, when the
                                      transcript has it; else kept as recorded on DATE
    <!-- file:PATH -->                the file PATH (relative to the repository root)
    <!-- recorded:DATE -->            output pasted from a real run on DATE (YYYY-MM-DD)
                                      that no transcript replays: never refilled, not
                                      checked (the site says so under the block)

A block the transcript does not hold keeps its old content and is listed as missing (a
``recorded=`` one as kept).

    python docs/tools/fill_docs.py TRANSCRIPT DOC.md [DOC.md ...]
"""

from __future__ import annotations

import re
import sys
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MARK = re.compile(
    r"^(?P<indent> *)<!-- (?:out:(?P<name>[\w-]+)(?: head=(?P<head>\d+))?(?: tail=(?P<tail>\d+))?"
    r"(?: recorded=(?P<on>\d{4}-\d\d-\d\d))?"
    r"|file:(?P<file>[\w./-]+)|recorded:(?P<recorded>\d{4}-\d\d-\d\d)) -->$"
)


def read_blocks(path: str) -> dict[str, list[str]]:
    blocks: dict[str, list[str]] = {}
    name = None
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("### "):
            name = line[4:].strip()
            blocks[name] = []
        elif name is not None:
            blocks[name].append(line)
    return blocks


def body_for(m: re.Match[str], blocks: dict[str, list[str]]) -> list[str] | None:
    if m["file"]:
        return (REPO / m["file"]).read_text(encoding="utf-8").rstrip("\n").split("\n")
    if m["recorded"]:
        return None
    body = blocks.get(m["name"])
    if body is None or not m["head"]:
        return body
    n = int(m["head"])
    keep = int(m["tail"]) if m["tail"] else 1 if body and body[-1].startswith("[exit") else 0
    if len(body) > n + keep:
        body = body[:n] + ["…"] + (body[-keep:] if keep else [])
    return body


def fill(path: str, blocks: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """Refill one page; ``(missing block names, kept recorded=… block names)``."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    out: list[str] = []
    missing: list[str] = []
    kept: list[str] = []
    today = datetime.now(timezone.utc).date().isoformat()
    i = 0
    while i < len(lines):
        out.append(lines[i])
        m = MARK.match(lines[i])
        if m and i + 1 < len(lines) and lines[i + 1].lstrip().startswith("```"):
            end = i + 2
            while not lines[end].lstrip().startswith("```"):
                end += 1
            body = body_for(m, blocks)
            if body is None:
                if m["on"]:
                    kept.append(m["name"])
                elif m["name"]:
                    missing.append(m["name"])
                out += lines[i + 1 : end + 1]
            else:
                if m["on"]:
                    out[-1] = lines[i].replace(f"recorded={m['on']}", f"recorded={today}")
                indent = m["indent"]
                out += [lines[i + 1], *(indent + b if b else b for b in body), lines[end]]
            i = end + 1
            continue
        i += 1
    Path(path).write_text("\n".join(out), encoding="utf-8")
    return missing, kept


def main() -> None:
    blocks = read_blocks(sys.argv[1])
    for path in sys.argv[2:]:
        missing, kept = fill(path, blocks)
        line = f"{path} missing blocks: {', '.join(missing) or 'none'}"
        print(line + (f" (kept as recorded: {', '.join(kept)})" if kept else ""))


if __name__ == "__main__":
    main()
