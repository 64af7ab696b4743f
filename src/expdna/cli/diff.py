"""``expdna diff A B``: section digests, then each changed field with its severity."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click

from expdna.cli.data import _size
from expdna.cli.output import emit_json
from expdna.cli.params import GivenPath
from expdna.cli.refs import load_manifests
from expdna.cli.store import StoreConfig, pass_config
from expdna.compare.diff import Change, DiffReport, diff_manifests
from expdna.manifest.display import printable
from expdna.manifest.dna import DNA_VERSION, short

#: Longest value shown whole in text output; JSON output always carries the full value.
MAX_SHOWN = 60
_DIGEST = re.compile(r"^(blake3:)?([0-9a-f]{64})$")
_NAME_WIDTH = 12


def shown(value: Any) -> str:
    """A value as one short line of text: digests to 12 hex, long text cut, None named."""
    if value is None:
        return "(none)"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    match = _DIGEST.match(text)
    if match:
        return f"{match.group(1) or ''}{short(match.group(2))}…"
    # One line per change: control characters (a newline in an argv word) are escaped.
    text = printable(text)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def _counts(side: dict[str, int] | None) -> str:
    if side is None:
        return "(none)"
    return "binary" if side.get("binary") else f"+{side['added']} -{side['removed']}"


def _item(value: Any) -> str:
    """A named list item in a few words: its size where it has one."""
    if isinstance(value, dict) and isinstance(value.get("size"), int):
        return _size(value["size"])
    return shown(value)


def _words(value: Any) -> str:
    count = len(value) if isinstance(value, list) else 0
    return f"{count} word" + ("" if count == 1 else "s")


def change_lines(change: Change) -> list[str]:
    """One line for the change, then one indented line per detail."""
    old, new = change.old, change.new
    item = change.path.endswith("]")  # a named item, compared whole
    if item and new is None:
        said = "missing in B" + ("" if isinstance(old, dict) else f" (A: {shown(old)})")
    elif item and old is None:
        said = "only in B" + ("" if isinstance(new, dict) else f": {shown(new)}")
    elif item and isinstance(old, dict) and isinstance(new, dict):
        said = f"changed {_item(old)} -> {_item(new)}"
    elif isinstance(old, list) or isinstance(new, list):  # a command line: its edits below
        said = f"{_words(old)} -> {_words(new)}"
    else:
        said = f"{shown(old)} -> {shown(new)}"
    lines = [f"{change.severity} {change.path}: {said}" + ("  (in dna)" if change.in_dna else "")]
    for detail in change.details:
        if "a" in detail:  # a patch's file
            lines.append(f"    {detail['path']}: {_counts(detail['a'])} -> {_counts(detail['b'])}")
        else:
            counted = "  (in dna)" if detail.get("in_dna") else ""
            lines.append(
                f"    {detail['path']}: {shown(detail['old'])} -> {shown(detail['new'])}{counted}"
            )
    return lines


def render(report: DiffReport) -> list[str]:
    lines = []
    for name, section in report.sections.items():
        if section.equal:
            lines.append(f"{name:<{_NAME_WIDTH}}=  {short(section.a)}")
        else:
            lines.append(f"{name:<{_NAME_WIDTH}}!= {short(section.a)} -> {short(section.b)}")
    for change in report.changes:
        lines += change_lines(change)
    a, b = (short(value) for value in report.dna)
    if report.equal:
        lines.append(f"dna: {a} (equal)" if a == b else f"dna: {a} -> {b} (equal once paired)")
    else:
        lines.append(f"dna: {a} -> {b} (differ)")
    return lines


@click.command("diff")
@click.argument("a", type=GivenPath(path_type=Path, readable=False), metavar="A")
@click.argument("b", type=GivenPath(path_type=Path, readable=False), metavar="B")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print {"equal", "dna", "sections", "changes"} with full values.',
)
@pass_config
@click.pass_context
def diff_command(ctx: click.Context, config: StoreConfig, a: Path, b: Path, as_json: bool) -> None:
    """Compare two manifests: which DNA sections differ, then every changed field.

    A and B are manifest files, or run ids / DNA prefixes (>= 6 hex) recorded in the store.

    Repositories are paired across checkouts (by name, then remote) as check pairs them;
    config files by the flag that named them, else their short name, so a moved file is
    equal. Named list items (dataset files, nodes, submodules) are compared by name.
    A changed config file lists its changed keys, a changed patch its files with +/- line
    counts (indented under the change).

    Severity: CRITICAL for code (commit, patch) and GPU identity (model, driver, VBIOS),
    WARN for versions, INFO otherwise; a change that alters the DNA is marked "(in dna)",
    is never INFO and comes first; no line is CRITICAL when the DNAs are equal.
    Exit 0 when the DNAs are equal, 1 when they differ.
    """
    first, second = load_manifests([str(a), str(b)], config)
    report = diff_manifests(first, second)
    for path, manifest, stale, stored, actual in zip(
        (a, b), (first, second), report.stale(), report.stored_dna, report.dna, strict=True
    ):
        if stale and stored is not None:
            click.echo(
                f"expdna: warning: {path}: stored DNA {short(stored)} does not match its "
                f"content ({short(actual)}); comparing the recomputed one",
                err=True,
            )
        elif manifest.dna is not None and manifest.dna.version != DNA_VERSION:
            # Its own DNA (what runs and twins show) is not the one printed below.
            click.echo(
                f"expdna: note: {path}: its DNA {short(manifest.dna.value)} is version "
                f"{manifest.dna.version}; compared in version {DNA_VERSION}",
                err=True,
            )
    if as_json:
        emit_json(report.to_dict())
    else:
        for line in render(report):
            click.echo(line)
    ctx.exit(0 if report.equal else 1)
