"""``expdna stability``: how much one setup's final metrics wander between repeats."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from expdna.cli.output import emit_json
from expdna.cli.store import StoreConfig, open_store, pass_config
from expdna.errors import NotFoundError
from expdna.manifest.display import short

if TYPE_CHECKING:
    from expdna.store.stability import MetricStats, Stability

_HEADERS = ("RUNS", "MEAN", "STD", "MIN", "MAX", "CV")


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _row(stats: MetricStats) -> tuple[str, ...]:
    return (
        str(stats.n),
        *(_number(v) for v in (stats.mean, stats.std, stats.min, stats.max, stats.cv)),
    )


def render(report: Stability) -> list[str]:
    """The text form: the group, then one table row per metric."""
    lines = [f"dna      {short(report.dna)}", f"runs     {len(report.runs)}"]
    if report.family is not None:
        count = f"{len(report.dnas)} DNA{'s' if len(report.dnas) != 1 else ''}"
        lines.append(f"family   {short(report.family)} (across seeds)")
        lines.append(f"pooled   {count}: {', '.join(short(d) for d in report.dnas)}")
    if report.left_out:
        states = sorted(set(report.left_out.values()))
        lines.append(
            f"left out {len(report.left_out)} not completed ({', '.join(states)}; "
            "--include-failed pools them)"
        )
    for run_id, sections in report.incomplete.items():
        lines.append(f"unknown  {run_id}: {', '.join(sections)} (incomplete run)")
    if report.ignored:
        lines.append(f"ignored  {', '.join(report.ignored)}")
        if report.family is None:
            count = f"{len(report.dnas)} DNA{'s' if len(report.dnas) != 1 else ''}"
            lines.append(f"pooled   {count}: {', '.join(short(d) for d in report.dnas)}")
    cells = [("METRIC", *_HEADERS)] + [(name, *_row(s)) for name, s in report.metrics.items()]
    widths = [max(len(row[i]) for row in cells) for i in range(len(_HEADERS) + 1)]
    lines.append("")
    for row in cells:
        text = "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        lines.append(text.rstrip())
    return lines


@click.command("stability")
@click.argument("ref", metavar="DNA-PREFIX|RUN")
@click.option(
    "--metric",
    "metric_names",
    multiple=True,
    metavar="NAME",
    help="Only this metric (repeatable; nested ones dotted: reward.mean). "
    "Default: every metric the runs reported.",
)
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="DOTTED.PATH",
    help="Also pool runs whose DNA differs only here (a dna_ignore glob, "
    "repeatable). --ignore config.resolved_args.seed also ignores training.seeds.seed, "
    "derived from it; --across-seeds pools every seed without naming one.",
)
@click.option(
    "--across-seeds",
    is_flag=True,
    help="Pool every run of the same setup whatever its seeds (the family digest).",
)
@click.option(
    "--include-failed",
    is_flag=True,
    help="Also pool runs that failed, were interrupted or never finished "
    "(by default only completed runs, and runs recorded before status, count).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@pass_config
def stability_command(
    config: StoreConfig,
    ref: str,
    metric_names: tuple[str, ...],
    ignore: tuple[str, ...],
    across_seeds: bool,
    include_failed: bool,
    as_json: bool,
) -> None:
    """Per metric: runs, mean, sample std, min, max and CV over every run of one DNA.

    CV is std / |mean|. Only completed runs are pooled unless --include-failed (the
    others are counted under "left out"). Exit 1 when none of the metrics was reported
    by any run.
    """
    from expdna.store.stability import stability

    with open_store(config, read_only=True) as store:
        report = stability(
            store,
            ref,
            metrics=metric_names,
            ignore=ignore,
            across_seeds=across_seeds,
            include_failed=include_failed,
        )
    for pattern in report.unmatched:
        click.echo(
            f"expdna: warning: --ignore {pattern} removes nothing from the DNA of "
            f"{short(report.dna)}",
            err=True,
        )
    if not report.metrics:
        asked = ", ".join(report.missing) if report.missing else "a metric"
        if as_json:
            emit_json(report.to_dict())
        if not report.runs and report.left_out:
            states = ", ".join(sorted(set(report.left_out.values())))
            raise NotFoundError(
                f"no completed run of DNA {short(report.dna)}: {len(report.left_out)} left out "
                f"({states}; --include-failed pools them)"
            )
        raise NotFoundError(
            f"none of the {len(report.runs)} runs of DNA {short(report.dna)} reported {asked}"
        )
    for name in report.missing:
        click.echo(f"expdna: no run of the group reported {name}", err=True)
    if as_json:
        emit_json(report.to_dict())
    else:
        for line in render(report):
            click.echo(line)
