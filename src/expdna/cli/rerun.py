"""``expdna rerun MANIFEST``: print the rerun script (--dry-run) or run it (--confirm)."""

from __future__ import annotations

from pathlib import Path

import click

from expdna.cli.check import result_line, verdict_line
from expdna.cli.refs import load_manifests
from expdna.cli.store import StoreConfig, pass_config
from expdna.compare.check import check_live
from expdna.compare.rerun import applied_env, render_script, rerun_confirmed, verify_dna
from expdna.errors import RefusedError


@click.command("rerun")
@click.argument("manifest", type=click.Path(path_type=Path, readable=False), metavar="MANIFEST")
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
@pass_config
@click.pass_context
def rerun_command(
    ctx: click.Context,
    config: StoreConfig,
    manifest: Path,
    dry_run: bool,
    confirm: bool,
    repos: tuple[Path, ...],
) -> None:
    """Rerun the command MANIFEST recorded; exactly one of --dry-run or --confirm.

    MANIFEST is a file, or a run id / DNA prefix (>= 6 hex) recorded in the store.

    --dry-run prints a POSIX shell script to review: expected commits and patch, the
    recorded environment and the quoted command, redacted values marked; every text from
    the manifest is quoted or escaped, so none can end a comment or a quote. --confirm
    verifies the manifest's DNA, checks this environment, and runs the command in the
    current directory, exiting with its status. It applies only the recorded variables
    that expdna collects, never one that changes what code loads (PATH, PYTHONPATH,
    LD_PRELOAD, ...): the script shows those for you to set. Neither installs packages
    or changes git state.
    """
    if dry_run == confirm:
        raise click.UsageError("give exactly one of --dry-run or --confirm")
    recorded = load_manifests([str(manifest)], config)[0]
    if dry_run:
        click.echo(render_script(recorded), nl=False)
        return
    if not recorded.command.argv:
        raise RefusedError(f"{manifest}: no command was recorded: there is nothing to rerun")
    verify_dna(recorded)
    applied_env(recorded)
    report = check_live(recorded, cwd=Path.cwd(), repos=repos)
    # stdout belongs to the command being rerun: our words go to stderr.
    for result in report.results:
        if result.status != "PASS":
            click.echo(result_line(result), err=True)
    click.echo(verdict_line(report), err=True)
    code = rerun_confirmed(recorded, cwd=Path.cwd(), report=report)
    # A child killed by signal N reads -N here; shells report it as 128 + N.
    ctx.exit(code if code >= 0 else 128 - code)
