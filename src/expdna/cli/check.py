"""``expdna check MANIFEST``: can this environment rerun it? One line per rule, a verdict."""

from __future__ import annotations

from pathlib import Path

import click

from expdna.cli.diff import shown
from expdna.cli.output import emit_json
from expdna.cli.params import GivenPath
from expdna.cli.refs import load_manifests
from expdna.cli.store import StoreConfig, pass_config
from expdna.compare.check import CheckReport, CheckResult, check_live


def result_line(result: CheckResult) -> str:
    if result.recorded is None and result.current is None and result.note:
        return f"{result.status} {result.field}: {result.note}"
    current = "(unknown)" if result.current is None else shown(result.current)
    line = f"{result.status} {result.field}: {shown(result.recorded)} -> {current}"
    return f"{line} ({result.note})" if result.note else line


#: A rule with more PASS lines than this shows them as one line unless --verbose: a
#: manifest lists every installed package, and 130 equal versions bury the one that is not.
FOLD_PASSES_OVER = 5


def report_lines(report: CheckReport, *, verbose: bool = False) -> list[str]:
    """The text report: every result, a rule's many PASS lines folded into one."""
    passes: dict[str, int] = {}
    for result in report.results:
        if result.status == "PASS":
            passes[result.rule] = passes.get(result.rule, 0) + 1
    folded = {rule for rule, n in passes.items() if n > FOLD_PASSES_OVER and not verbose}
    lines: list[str] = []
    for result in report.results:
        if result.status != "PASS" or result.rule not in folded:
            lines.append(result_line(result))
        elif passes[result.rule] > 0:
            group = result.field.rpartition(".")[0] or result.field
            lines.append(f"PASS {group}: {passes[result.rule]} equal (--verbose lists them)")
            passes[result.rule] = 0
    return lines


def verdict_line(report: CheckReport) -> str:
    counts = report.counts()
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    return f"verdict: {report.verdict} ({summary})"


@click.command("check")
@click.argument("manifest", type=GivenPath(path_type=Path, readable=False), metavar="MANIFEST")
@click.option(
    "--repo",
    "repos",
    multiple=True,
    type=GivenPath(path_type=Path),
    metavar="PATH",
    help="Another git repository to compare (repeatable); the one containing cwd is always in.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print {"verdict", "results": [{"rule", "field", "status", "recorded", "current"}]}.',
)
@click.option("--no-data", "no_data", is_flag=True, help="Do not re-digest recorded datasets.")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help=f"List every PASS line (a rule with over {FOLD_PASSES_OVER} shows them as one line).",
)
@pass_config
@click.pass_context
def check_command(
    ctx: click.Context,
    config: StoreConfig,
    manifest: Path,
    repos: tuple[Path, ...],
    as_json: bool,
    no_data: bool,
    verbose: bool,
) -> None:
    """Check MANIFEST against this environment: code, Python, packages, GPU, CUDA stack.

    MANIFEST is a file, or a run id / DNA prefix (>= 6 hex) recorded in the store. The
    command, its entry script, config files and datasets (unless --no-data) are checked
    too.

    FAIL: a manifest edited after it was written (its DNA does not match its content), a
    command that does not match the recorded arguments, an entry script outside the
    recorded repositories (or no code recorded), another commit or patch, a changed or
    missing config file or dataset, another GPU model, another Python/CUDA/torch major.
    WARN: another minor version, driver, VBIOS, NCCL, cuDNN or package version, a value
    that cannot be read here, or a manifest that recorded nothing to check.
    Exit 0 without FAIL, 1 with any FAIL.
    """
    recorded = load_manifests([str(manifest)], config)[0]
    report = check_live(recorded, cwd=Path.cwd(), repos=repos, data=not no_data)
    if as_json:
        emit_json(report.to_dict())
    else:
        for line in report_lines(report, verbose=verbose):
            click.echo(line)
        click.echo(verdict_line(report))
    ctx.exit(1 if report.verdict == "FAIL" else 0)
