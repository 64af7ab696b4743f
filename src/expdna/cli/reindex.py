"""``expdna reindex``: rebuild the index from the object directory."""

from __future__ import annotations

import time

import click

from expdna.cli.output import emit_json
from expdna.cli.store import StoreConfig, pass_config


@click.command("reindex")
@click.option("--json", "as_json", is_flag=True, help="Print the report as a JSON object.")
@click.option(
    "--force",
    is_flag=True,
    help="Rebuild an SQLite index written by a newer expdna (a revision this one does not "
    "know) at this expdna's revision, dropping the tables and columns that revision added.",
)
@pass_config
@click.pass_context
def reindex_command(ctx: click.Context, config: StoreConfig, as_json: bool, force: bool) -> None:
    """Rebuild the whole index (SQLite or PostgreSQL) from the object directory.

    Every run, pin, link and metrics update is replayed from the store's objects and log,
    with its original times, so queries answer as before. Use it when the index was lost,
    truncated or corrupted, or when fsck says it is behind. Exit 1 when something could
    not be replayed (each named). An index at a revision this expdna does not know (a
    newer expdna's) is refused, exit 2, unless --force.
    """
    from expdna.store.reindex import reindex

    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 1.0 or done == total:
            last[0] = now
            click.echo(f"reindex: {done}/{total} runs", err=True)

    report = reindex(config, progress=progress, force=force)
    if as_json:
        emit_json(report.to_dict())
    else:
        for problem in report.problems:
            click.echo(f"problem: {problem}")
        adopted = (
            f" ({report.adopted} adopted from manifests older than the log)"
            if report.adopted
            else ""
        )
        click.echo(
            f"reindexed {report.runs} runs{adopted} and {report.entries} log entries "
            f"in {report.seconds:.1f} s"
        )
    ctx.exit(0 if report.ok else 1)
