"""``expdna rerun MANIFEST``: print the rerun script (--dry-run) or run it (--confirm)."""

from __future__ import annotations

import re
from pathlib import Path

import click

from expdna.cli.check import result_line, verdict_line
from expdna.cli.params import GivenPath
from expdna.cli.refs import load_manifests
from expdna.cli.store import StoreConfig, pass_config
from expdna.compare.check import check_live
from expdna.compare.rerun import (
    applied_env,
    not_applied_env,
    refusal_reasons,
    render_script,
    run_recorded,
    shell_word,
    trusted_command_line,
    verify_dna,
)
from expdna.errors import InvalidInputError, RefusedError
from expdna.manifest.model import Manifest

_HEX = re.compile(r"[0-9a-f]{6,64}")
#: Runs of one DNA prefix compared by their commands; more are not looked at.
_PREFIX_RUNS = 50


def _same_command(ref: str, config: StoreConfig) -> None:
    """A DNA prefix that names runs with different commands is ambiguous (exit 2): with
    the command outside the DNA (versions 1 and 2) two runs of one DNA may differ in it."""
    if not _HEX.fullmatch(ref) or Path(ref).exists():
        return
    from expdna.cli.refs import _open

    with _open(config, ref) as store:
        runs = store.runs(dna_prefix=ref, limit=_PREFIX_RUNS)
        if len(runs) < 2 or any(run.run_id == ref for run in runs):
            return
        commands: dict[tuple[str, ...], str] = {}
        for run in runs:
            commands.setdefault(tuple(store.load(run.run_id).command.argv), run.run_id)
    if len(commands) > 1:
        listed = "; ".join(
            f"{run_id}: {' '.join(shell_word(w) for w in argv)}"
            for argv, run_id in commands.items()
        )
        raise InvalidInputError(
            f"{ref}: ambiguous: {len(runs)} runs of this DNA with {len(commands)} different "
            f"commands ({listed}); name one by its run id"
        )


def _confirm(
    ctx: click.Context,
    recorded: Manifest,
    manifest: Path,
    repos: tuple[Path, ...],
    trust_command: bool,
    data: bool,
) -> None:
    if not recorded.command.argv:
        raise RefusedError(f"{manifest}: no command was recorded: there is nothing to rerun")
    verify_dna(recorded)
    applied = applied_env(recorded)
    report = check_live(recorded, cwd=Path.cwd(), repos=repos, data=data)
    # stdout belongs to the command being rerun: our words go to stderr.
    for result in report.results:
        if result.status != "PASS":
            click.echo(result_line(result), err=True)
    click.echo(verdict_line(report), err=True)
    reasons = refusal_reasons(recorded, report, trust_command=trust_command)
    if reasons:
        for reason in reasons:
            click.echo(f"expdna: error: refusing to rerun: {reason}", err=True)
        ctx.exit(1)
    left = not_applied_env(recorded)
    click.echo(
        f"rerun: applied {len(applied)} recorded "
        + ("variable" if len(applied) == 1 else "variables")
        + f"; did not apply {len(left)}"
        + (f" ({', '.join(left)}: see rerun --dry-run)" if left else ""),
        err=True,
    )
    trusted = trusted_command_line(recorded) if trust_command else None
    if trusted is not None:
        click.echo(trusted, err=True)
    code = run_recorded(recorded, cwd=Path.cwd())
    # A child killed by signal N reads -N here; shells report it as 128 + N.
    ctx.exit(code if code >= 0 else 128 - code)


@click.command("rerun")
@click.argument("manifest", type=GivenPath(path_type=Path, readable=False), metavar="MANIFEST")
@click.option("--dry-run", "dry_run", is_flag=True, help="Print the script; run nothing.")
@click.option(
    "--confirm",
    is_flag=True,
    help="Check this environment first, then run the recorded command unless a check FAILs "
    "or an input was redacted.",
)
@click.option(
    "--trust-command",
    is_flag=True,
    help="Run the recorded command of a manifest whose DNA (version 1 or 2) does not cover "
    "it; says on stderr what it trusts.",
)
@click.option("--no-data", "no_data", is_flag=True, help="Do not re-digest recorded datasets.")
@click.option(
    "--repo",
    "repos",
    multiple=True,
    type=GivenPath(path_type=Path),
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
    trust_command: bool,
    no_data: bool,
    repos: tuple[Path, ...],
) -> None:
    """Rerun the command MANIFEST recorded; exactly one of --dry-run or --confirm.

    MANIFEST is a file, or a run id / DNA prefix (>= 6 hex) recorded in the store; a DNA
    prefix whose runs recorded different commands is ambiguous (exit 2).

    --dry-run prints a POSIX shell script to review: expected commits and patch, the
    recorded environment and the rebuilt command, redacted values marked; every text from
    the manifest is quoted or escaped, so none can end a comment or a quote. Per-allocation
    rendezvous values (--rdzv-endpoint, master address and port) become variables to set.

    --confirm verifies the manifest's DNA, checks this environment (as `expdna check`) and
    runs the command in the current directory, exiting with its status. It refuses (exit
    1, one line per reason) a FAIL, an entry script outside the recorded repositories, a
    command the DNA does not cover (versions 1 and 2: unless --trust-command) and a
    redacted input. Of the recorded variables it applies only an allow-list of settings
    that shape results and load nothing (thread counts, NCCL algorithm knobs,
    CUBLAS_WORKSPACE_CONFIG, PYTHONHASHSEED...): the script shows every other one, with
    why. Neither installs packages or changes git state.
    """
    if dry_run == confirm:
        raise click.UsageError("give exactly one of --dry-run or --confirm")
    _same_command(str(manifest), config)
    recorded = load_manifests([str(manifest)], config)[0]
    if dry_run:
        click.echo(render_script(recorded), nl=False)
        return
    _confirm(ctx, recorded, manifest, repos, trust_command, not no_data)
