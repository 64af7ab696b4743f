"""``expdna rerun MANIFEST``: print the rerun script (--dry-run) or run it (--confirm)."""

from __future__ import annotations

from pathlib import Path

import click

from expdna.cli.check import result_line, verdict_line
from expdna.compare.check import check_live
from expdna.compare.rerun import render_script, rerun_confirmed
from expdna.errors import RefusedError
from expdna.manifest.io import load_manifest


@click.command("rerun")
@click.argument("manifest", type=click.Path(path_type=Path), metavar="MANIFEST")
@click.option("--dry-run", "dry_run", is_flag=True, help="Print the script; run nothing.")
@click.option(
    "--confirm",
    is_flag=True,
    help="Check this environment first, then run the recorded command unless a check FAILs "
    "or an input was redacted.",
)
@click.option(
    "--repo",
    "repos",
    multiple=True,
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="Another git repository for the check (repeatable), as in `expdna check`.",
)
@click.pass_context
def rerun_command(
    ctx: click.Context, manifest: Path, dry_run: bool, confirm: bool, repos: tuple[Path, ...]
) -> None:
    """Rerun the command MANIFEST recorded; exactly one of --dry-run or --confirm.

    --dry-run prints a POSIX shell script to review: expected commits and patch, the
    recorded environment and the quoted command, redacted values marked. --confirm runs
    the command in the current directory and exits with its status. Neither installs
    packages or changes git state.
    """
    if dry_run == confirm:
        raise click.UsageError("give exactly one of --dry-run or --confirm")
    recorded = load_manifest(manifest)
    if dry_run:
        click.echo(render_script(recorded), nl=False)
        return
    if not recorded.command.argv:
        raise RefusedError(f"{manifest}: no command was recorded: there is nothing to rerun")
    report = check_live(recorded, cwd=Path.cwd(), repos=repos)
    # stdout belongs to the command being rerun: our words go to stderr.
    for result in report.results:
        if result.status != "PASS":
            click.echo(result_line(result), err=True)
    click.echo(verdict_line(report), err=True)
    code = rerun_confirmed(recorded, cwd=Path.cwd(), report=report)
    # A child killed by signal N reads -N here; shells report it as 128 + N.
    ctx.exit(code if code >= 0 else 128 - code)
