"""The ``expdna`` command: thin click commands over the library, one module per group.

The root group is lazy (click's "Lazily Loading Subcommands"): a command's module is
imported when that command runs or shows its own help, so ``expdna --help``,
``expdna --version`` and each query load only what they use. ``--help`` lists every command
from :data:`COMMANDS`, whose summaries tests/unit/test_cli_startup.py keeps equal to the
commands' own docstrings.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from typing import Any

import click
from click.formatting import HelpFormatter

from expdna import __version__
from expdna.errors import ExpdnaError
from expdna.manifest.display import printable

#: name -> ("module:attribute", the first paragraph of the command's docstring).
COMMANDS: dict[str, tuple[str, str]] = {
    "generate": (
        "expdna.cli.generate:generate_command",
        "Write a manifest describing this checkout and the command ARGV.",
    ),
    "run": (
        "expdna.cli.run:run_command",
        "Run CMD and record it: the manifest, then how it ended.",
    ),
    "check": (
        "expdna.cli.check:check_command",
        "Check MANIFEST against this environment: code, Python, packages, GPU, CUDA stack.",
    ),
    "diff": (
        "expdna.cli.diff:diff_command",
        "Compare two manifests: which DNA sections differ, then every changed field.",
    ),
    "rerun": (
        "expdna.cli.rerun:rerun_command",
        "Rerun the command MANIFEST recorded; exactly one of --dry-run or --confirm.",
    ),
    "data": ("expdna.cli.data:data_group", "Datasets recorded in manifests."),
    "stability": (
        "expdna.cli.stability:stability_command",
        "Per metric: runs, mean, sample std, min, max and CV over every run of one DNA.",
    ),
    "explain": (
        "expdna.cli.explain:explain_command",
        "Which recorded fields go with a metric, or with failing, across one setup's runs.",
    ),
    "record": (
        "expdna.cli.record:record_command",
        "Record manifest files into the store (--store / EXPDNA_STORE).",
    ),
    "show": (
        "expdna.cli.query:show_command",
        "Show a recorded run: by run id, or the newest run of a DNA (prefix of >= 6 hex).",
    ),
    "runs": ("expdna.cli.query:runs_command", "List recorded runs, newest first."),
    "twins": (
        "expdna.cli.query:twins_command",
        "Every recorded run with the same DNA as a run, a DNA prefix or a manifest file.",
    ),
    "find": (
        "expdna.cli.query:find_command",
        "Runs matching every filter given (filters AND together), newest first.",
    ),
    "fsck": (
        "expdna.cli.store:fsck_command",
        "Re-hash every object and check every reference from the index.",
    ),
    "gc": (
        "expdna.cli.store:gc_command",
        "Remove objects that no recorded run references, and stray temporary files.",
    ),
    "db": (
        "expdna.cli.db:db_group",
        "The index database: its schema revision and upgrades (alembic, shipped with expdna).",
    ),
    "pin": (
        "expdna.cli.pin:pin_command",
        "Bind a checkpoint's BLAKE3 digest (not the file) and a name to a recorded run.",
    ),
    "which": (
        "expdna.cli.pin:which_command",
        "Which run(s) made these checkpoints? A file is looked up by its content, so a renamed "
        "or copied checkpoint is found; anything else by pin name (or blake3:<hex>).",
    ),
    "lineage": (
        "expdna.cli.lineage:lineage_command",
        "Ancestors and descendants of a run (a run id or DNA prefix), transitively.",
    ),
    "link": (
        "expdna.cli.lineage:link_command",
        "Record that CHILD resumed from, reran or derives from PARENT (both recorded runs).",
    ),
    "export": (
        "expdna.cli.export:export_command",
        "Export runs, oldest first: run_id, dna, generated_at, commit, algorithm, gpu_model, "
        "driver, cuda, nccl, python, state, the seven section digests and a float column "
        "metric_<name> per final metric.",
    ),
    "reindex": (
        "expdna.cli.reindex:reindex_command",
        "Rebuild the whole index (SQLite or PostgreSQL) from the object directory.",
    ),
    "ui": (
        "expdna.cli.ui:ui_command",
        "Serve a read-only web view of the store: runs, DNAs, diffs, the fleet.",
    ),
}


def load_command(name: str) -> click.Command:
    """Import the module of command ``name`` and return its click command."""
    module_name, attribute = COMMANDS[name][0].split(":")
    command = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{COMMANDS[name][0]} is not a click command")
    return command


class _Group(click.Group):
    """Loads a command's module on first use; maps expdna's errors to one line on stderr
    and their exit code, in one place."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        return load_command(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: HelpFormatter) -> None:
        # click.Group's layout, from stand-ins holding the summaries in COMMANDS instead of
        # the commands themselves: listing them must not import them.
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [
            (name, click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit))
            for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            try:
                return super().invoke(ctx)
            finally:
                sys.stdout.flush()  # a reader gone before the end (| head) shows here
        except BrokenPipeError:
            # The reader of stdout stopped early (`expdna runs | head -1`): it has what it
            # wanted. Python's recipe: point stdout at devnull, so the flush at exit
            # cannot fail again, and end quietly.
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                os.close(devnull)
            except (OSError, ValueError):  # a stdout without a file descriptor
                pass
            ctx.exit(0)
        except ExpdnaError as exc:
            # one line, as the terminal shows it: a path or value from anyone may hold a
            # newline or an escape sequence (click would strip the latter from a pipe)
            click.echo(f"expdna: error: {printable(str(exc))}", err=True)
            ctx.exit(exc.exit_code)
        except OSError as exc:
            if isinstance(exc, FileNotFoundError) and not _cwd_exists():
                # the shell's directory was removed under it: every relative path is gone
                click.echo(
                    "expdna: error: the current directory no longer exists (removed or "
                    "moved): cd to one that does",
                    err=True,
                )
                ctx.exit(2)
            if exc.errno not in _REFUSED_WRITES:
                raise
            # a filesystem that refuses a write (read-only, full, not ours): one line
            where = f"{exc.filename}: " if exc.filename else ""
            click.echo(f"expdna: error: {where}{exc.strerror or exc}", err=True)
            ctx.exit(2)
        except KeyboardInterrupt:
            # 128 + SIGINT, as a shell reports it; the store is consistent: the transaction
            # of the batch being written rolled back, and its blobs are left for gc
            click.echo("expdna: interrupted", err=True)
            ctx.exit(130)


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


#: errno values of a write the filesystem refuses: reported in one line, exit 2.
_REFUSED_WRITES = frozenset(
    getattr(errno, name)
    for name in ("EROFS", "EACCES", "EPERM", "ENOSPC", "EDQUOT")
    if hasattr(errno, name)
)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="expdna")
@click.option(
    "--store",
    "store",
    envvar="EXPDNA_STORE",
    metavar="DIR|s3://BUCKET/PREFIX",
    help="Store directory, or a bucket on S3-compatible storage (env EXPDNA_STORE; default: "
    "the user data dir, ~/.local/share/expdna).",
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
    expdna run --record -- python train.py         run it, record how it ended
    expdna check manifest.json                     can this environment rerun it?
    expdna diff a.json b.json                      what differs between two runs
    expdna rerun manifest.json --dry-run           the script that would rerun it

    Exit codes: 0 success, 1 a negative answer (FAIL, differ, not found),
    2 usage error or invalid input.
    """
    # Imported here, not at the top: `expdna --version` and `--help` exit before this runs.
    import logging

    from expdna.store.config import StoreConfig

    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="expdna: %(levelname)s: %(message)s")
    ctx.obj = StoreConfig.resolve(store, index_url)


def main() -> None:
    cli(prog_name="expdna")
