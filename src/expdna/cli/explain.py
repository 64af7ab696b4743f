"""``expdna explain``: which recorded fields go with a metric, or with failing, across the
runs of one setup."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

import click

from expdna.cli.output import emit_json
from expdna.cli.store import StoreConfig, open_store, pass_config
from expdna.errors import InvalidInputError, NotFoundError
from expdna.explain import load_numpy
from expdna.manifest.display import printable, short

if TYPE_CHECKING:
    from expdna.explain.report import Explanation, Finding

#: Findings printed by default (--json holds them all).
TOP = 10
_WIDE = 48
_VALUE = 32


def _cut(text: str, width: int = _WIDE) -> str:
    """``text`` on one line, at most ``width`` characters: the middle gives way, as the
    end is what tells builds apart (``2.6.0a0+git1234…-patched``)."""
    text = printable(text)
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def _values(finding: Finding, width: int = _VALUE) -> list[str]:
    """A finding's values as shown: cut to ``width``, unless two would then read alike."""
    cut = [_cut(value.value, width) for value in finding.values]
    if len(set(cut)) < len(cut):
        return [printable(value.value) for value in finding.values]
    return cut


def _number(value: float) -> str:
    return f"{value:.4g}"


def _rows(rank: int, finding: Finding, binary: bool) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    shown = _values(finding)
    for i, value in enumerate(finding.values):
        centre = f"{value.bad}/{value.n}" if binary else _number(value.centre)
        head = i == 0
        rows.append(
            (
                str(rank) if head else "",
                _cut(finding.fields[0]) if head else "",
                shown[i],
                str(value.n),
                centre,
                f"{finding.effect:+.2f}" if head else "",
                f"{finding.q:.2g}" if head else "",
            )
        )
    rows += [("", _cut(f"  = {path}"), "", "", "", "", "") for path in finding.fields[1:]]
    return rows


def render(report: Explanation, top: int = TOP) -> list[str]:
    """The text form: the selection, the ranked table, the top sentence, the limits."""
    from expdna.explain.report import limits, sentence

    binary = report.outcome.kind == "binary"
    lines = []
    if report.setup is not None:
        lines.append(f"setup    {short(report.setup)} (code, config, training, data; seeds pooled)")
    lines.append(f"runs     {report.runs} ({report.judged} with an outcome)")
    kind = "bad/good" if binary else "numeric, median per value"
    lines.append(f"outcome  {report.outcome.label} ({kind})")
    lines.append("")
    centre = "BAD" if binary else "MEDIAN"
    effect = "RATE DIFF" if binary else "DELTA"
    cells: list[tuple[str, ...]] = [("#", "FIELD", "VALUE", "N", centre, effect, "ADJ P")]
    for rank, finding in enumerate(report.findings[:top], 1):
        cells += _rows(rank, finding, binary)
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    numeric = {3, 4, 5, 6}
    for row in cells if report.findings else ():
        text = "  ".join(
            cell.rjust(width) if i in numeric else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        lines.append(text.rstrip())
    if len(report.findings) > top:
        lines.append(f"... {len(report.findings) - top} more findings (--top, or --json)")
    lines += ["", printable(sentence(report)), ""] if report.findings else [sentence(report), ""]
    lines += [f"limits   {printable(line)}" for line in limits(report)]
    return lines


@click.command("explain")
@click.option("--metric", metavar="NAME", help="The final metric to explain (dotted: reward.mean).")
@click.option(
    "--same-setup",
    "same_setup",
    metavar="RUN",
    help="Every run whose code, config, training and data equal RUN's (seeds pooled), on "
    "any hardware, environment and runtime. RUN: a run id, a DNA prefix, or the setup "
    "digest an answer prints.",
)
@click.option(
    "--where",
    "where",
    multiple=True,
    metavar="PATH=VALUE",
    help="Only runs where this manifest leaf holds VALUE (repeatable, as `runs --where`).",
)
@click.option("--bad", metavar="'NAME>X'", help="Split the runs: bad where NAME>X (or <, >=, <=).")
@click.option("--worst", metavar="N%", help="Split the runs: the highest N% of --metric are bad.")
@click.option(
    "--status",
    "status",
    metavar="STATE",
    help="Explain a run state: bad where status.state is STATE (failed, interrupted, ...).",
)
@click.option(
    "--top", default=TOP, show_default=True, type=click.IntRange(1), help="Findings shown."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@pass_config
def explain_command(
    config: StoreConfig,
    metric: str | None,
    same_setup: str | None,
    where: tuple[str, ...],
    bad: str | None,
    worst: str | None,
    status: str | None,
    top: int,
    as_json: bool,
) -> None:
    """Which recorded fields go with a metric, or with failing, across one setup's runs.

    For every field that varies among the runs (manifest leaves, package versions, node
    fingerprints), how the outcome differs per value, with a permutation p-value corrected
    for testing every field (Benjamini-Hochberg). Fields that split the runs identically are
    one finding. An association, not a cause. A NaN metric is bad in a --bad or --worst
    split. Exit 1 when no selected run has the outcome, or when a split leaves no bad run or
    no good one. Needs SciPy: pip install 'expdna[explain]'.
    """
    from expdna.explain.outcome import asked as parse_asked
    from expdna.store.queries import parse_where

    asked = parse_asked(metric, bad, worst, status)
    filters = [parse_where(w) for w in where]
    if same_setup is None and not filters:
        raise InvalidInputError("give the runs to explain: --same-setup RUN or --where PATH=VALUE")
    # found, not imported: only the exact test of a small fleet imports it
    if importlib.util.find_spec("scipy") is None:
        raise InvalidInputError("expdna explain needs SciPy: pip install 'expdna[explain]'")
    load_numpy()
    from expdna.explain.query import check_answered, explain_runs

    with open_store(config, read_only=True) as store:
        report = explain_runs(store, asked, same_setup=same_setup, where=filters)
        try:
            check_answered(store, report, filters)
        except NotFoundError:
            if as_json:  # the empty report on stdout, the negative answer on stderr
                emit_json(report.to_dict())
            raise
    if as_json:
        emit_json(report.to_dict())
        return
    for line in render(report, top):
        click.echo(line)
