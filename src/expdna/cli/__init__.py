"""The ``expdna`` command: thin click commands over the library, one module per group."""

from __future__ import annotations

import logging
from typing import Any

import click

from expdna import __version__
from expdna.cli.check import check_command
from expdna.cli.data import data_group
from expdna.cli.db import db_group
from expdna.cli.diff import diff_command
from expdna.cli.export import export_command
from expdna.cli.generate import generate_command
from expdna.cli.lineage import lineage_command, link_command
from expdna.cli.pin import pin_command, which_command
from expdna.cli.query import find_command, runs_command, show_command, twins_command
from expdna.cli.record import record_command
from expdna.cli.rerun import rerun_command
from expdna.cli.stability import stability_command
from expdna.cli.store import fsck_command, gc_command
from expdna.errors import ExpdnaError
from expdna.store.config import StoreConfig


class _Group(click.Group):
    """Maps expdna's errors to one line on stderr and their exit code, in one place."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ExpdnaError as exc:
            click.echo(f"expdna: error: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="expdna")
@click.option(
    "--store",
    "store",
    envvar="EXPDNA_STORE",
    metavar="DIR",
    help="Store directory (env EXPDNA_STORE; default: the user data dir, ~/.local/share/expdna).",
)
@click.option(
    "--index-url",
    "index_url",
    envvar="EXPDNA_INDEX_URL",
    metavar="URL",
    help="Shared index, postgresql+psycopg://USER@HOST/DB (env EXPDNA_INDEX_URL); default: "
    "SQLite inside the store.",
)
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
@click.pass_context
def cli(ctx: click.Context, store: str | None, index_url: str | None, verbose: int) -> None:
    """Record what a training run was: a secret-free manifest and its experiment DNA.

    \b
    expdna generate -- python train.py --lr 3e-4   write a manifest, print its DNA
    expdna check manifest.json                     can this environment rerun it?
    expdna diff a.json b.json                      what differs between two runs
    expdna rerun manifest.json --dry-run           the script that would rerun it

    Exit codes: 0 success, 1 a negative answer (FAIL, differ, not found),
    2 usage error or invalid input.
    """
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="expdna: %(levelname)s: %(message)s")
    ctx.obj = StoreConfig.resolve(store, index_url)


cli.add_command(generate_command)
cli.add_command(check_command)
cli.add_command(diff_command)
cli.add_command(rerun_command)
cli.add_command(data_group)
cli.add_command(stability_command)
for _store_command in (
    record_command,
    show_command,
    runs_command,
    twins_command,
    find_command,
    fsck_command,
    gc_command,
    db_group,
    pin_command,
    which_command,
    lineage_command,
    link_command,
    export_command,
):
    cli.add_command(_store_command)


def main() -> None:
    cli(prog_name="expdna")
