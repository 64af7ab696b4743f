"""Refill the real-output blocks of the docs from a transcript (see transcript.sh).

A block is marked by an HTML comment on the line before its fence:

    <!-- out:NAME -->                 the whole transcript block NAME
    <!-- out:NAME head=N -->          its first N lines, "…", and its "[exit N]" line
    <!-- out:NAME head=N tail=M -->   its first N lines, "…", and its last M lines
    <!-- file:PATH -->                the file PATH (relative to the repository root)

A block the transcript does not hold keeps its old content and is listed as missing.

    python docs/tools/fill_docs.py TRANSCRIPT DOC.md [DOC.md ...]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MARK = re.compile(
    r"^(?P<indent> *)<!-- (?:out:(?P<name>[\w-]+)(?: head=(?P<head>\d+))?(?: tail=(?P<tail>\d+))?"
    r"|file:(?P<file>[\w./-]+)) -->$"
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
    body = blocks.get(m["name"])
    if body is None or not m["head"]:
        return body
    n = int(m["head"])
    keep = int(m["tail"]) if m["tail"] else 1 if body and body[-1].startswith("[exit") else 0
    if len(body) > n + keep:
        body = body[:n] + ["…"] + (body[-keep:] if keep else [])
    return body


def fill(path: str, blocks: dict[str, list[str]]) -> list[str]:
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    out: list[str] = []
    missing: list[str] = []
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
                missing.append(m["name"])
                out += lines[i + 1 : end + 1]
            else:
                indent = m["indent"]
                out += [lines[i + 1], *(indent + b if b else b for b in body), lines[end]]
            i = end + 1
            continue
        i += 1
    Path(path).write_text("\n".join(out), encoding="utf-8")
    return missing


def main() -> None:
    blocks = read_blocks(sys.argv[1])
    for path in sys.argv[2:]:
        missing = fill(path, blocks)
        print(path, "missing blocks:", ", ".join(missing) or "none")


if __name__ == "__main__":
    main()
