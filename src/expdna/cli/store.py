"""Opening the store for a command, and ``expdna fsck`` / ``expdna gc``.

The store and index come from the global ``--store`` / ``--index-url`` options (or
``EXPDNA_STORE`` / ``EXPDNA_INDEX_URL``); SQLAlchemy is imported only when a command opens
the store, so ``expdna --help`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from expdna.store.config import StoreConfig

if TYPE_CHECKING:
    from expdna.store.facade import Store

__all__ = ["StoreConfig", "fsck_command", "gc_command", "open_store", "pass_config"]

#: Hands a command the :class:`StoreConfig` the root group resolved from its options.
pass_config = click.make_pass_decorator(StoreConfig)


def open_store(config: StoreConfig, *, checked: bool = True, read_only: bool = False) -> Store:
    """The store ``config`` names; ``checked=False`` skips the revision check.

    ``read_only``: for a query, which must create and change nothing: a missing store is
    an error (exit 2), and the index is opened read-only (:meth:`Store.open_for_reading`).
    """
    from expdna.store.facade import Store

    return Store.from_config(config, checked=checked, read_only=read_only)


@click.command("fsck")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print {"ok", "objects", "runs", "problems", "unreferenced", "temp_files", "pending", '
    '"unfinished"}.',
)
@pass_config
@click.pass_context
def fsck_command(ctx: click.Context, config: StoreConfig, as_json: bool) -> None:
    """Re-hash every object and check every reference from the index.

    Exit 0 when the store is consistent, 1 naming each problem otherwise. Unreferenced
    objects (left by a recorder that stopped early) are not problems: `expdna gc` removes them.
    """
    from expdna.store.errors import StoreError
    from expdna.store.fsck import unreadable_index

    try:
        store = open_store(config, read_only=True)
    except StoreError as exc:
        lost = unreadable_index(config, exc)
        if lost is None:
            raise
        click.echo(f"problem: {lost}")
        ctx.exit(1)
    with store:
        report = store.fsck()
    if as_json:
        from dataclasses import asdict

        from expdna.cli.output import emit_json

        emit_json({"ok": report.ok, **asdict(report)})
        ctx.exit(0 if report.ok else 1)
    for problem in report.problems:
        click.echo(f"problem: {problem}")
    click.echo(
        f"checked {report.objects} objects and {report.runs} runs: "
        f"{len(report.problems)} problems; {report.unreferenced} unreferenced objects, "
        f"{report.temp_files} temporary files (expdna gc removes them)"
    )
    if report.unfinished:
        shown = ", ".join(report.unfinished[:10]) + (" ..." if len(report.unfinished) > 10 else "")
        click.echo(
            f"{len(report.unfinished)} run{'s' if len(report.unfinished) != 1 else ''} "
            f"unfinished (still running long after the start; $EXPDNA_UNFINISHED_AFTER): {shown}"
        )
    if report.pending:
        click.echo(
            f"{report.pending} log entries not in the index yet: a recorder at work, or one "
            "that stopped (`expdna reindex` applies them)"
        )
    ctx.exit(0 if report.ok else 1)


@click.command("gc")
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
@click.option(
    "--grace",
    "grace_s",
    type=click.FloatRange(min=0),
    default=3600.0,
    show_default=True,
    metavar="SECONDS",
    help="Keep unreferenced objects younger than this: a recorder may be about to use them.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print {"dry_run", "removed": [blake3:<hex>...], "removed_bytes", "temp_files", '
    '"kept_young"}.',
)
@pass_config
def gc_command(config: StoreConfig, dry_run: bool, grace_s: float, as_json: bool) -> None:
    """Remove objects that no recorded run references, and stray temporary files.

    A missing store is exit 2 (gc creates none); a store whose index is lost is exit 1,
    naming `expdna reindex`: gc removes nothing until the index is rebuilt.
    """
    _refuse_without_sqlite_index(config)
    with open_store(config) as store:
        report = store.gc(dry_run=dry_run, grace_s=grace_s)
    if as_json:
        from dataclasses import asdict

        from expdna.cli.output import emit_json
        from expdna.digest.refs import ref

        emit_json({**asdict(report), "removed": [ref(d) for d in report.removed]})
        return
    for line in report.irregular:
        click.echo(f"expdna: {line}", err=True)
    verb = "would remove" if dry_run else "removed"
    if dry_run:
        from expdna.digest.refs import ref

        for digest in report.removed:
            click.echo(f"{verb} {ref(digest)}")
        for name in report.temp_files:
            click.echo(f"{verb} {name}")
    young = f"; kept {report.kept_young} younger than {grace_s:g} s" if report.kept_young else ""
    click.echo(
        f"{verb} {len(report.removed)} objects ({report.removed_bytes} bytes) and "
        f"{len(report.temp_files)} temporary files{young}"
    )


def _refuse_without_sqlite_index(config: StoreConfig) -> None:
    """Before opening (which would create an empty index): a store's SQLite index is there."""
    from expdna.store import SQLITE_NAME
    from expdna.store.drift import REINDEX
    from expdna.store.errors import IndexLostError, StoreError
    from expdna.store.presence import require_index

    if config.index_url is not None or (config.root / SQLITE_NAME).is_file():
        return
    objects = config.root / "objects"
    if not objects.is_dir():
        raise StoreError(f"no store at {config.root}")
    require_index(config)  # objects there: "index missing: run expdna reindex", exit 2
    raise IndexLostError(
        f"gc removes nothing: index {config.root / SQLITE_NAME} is missing, but object "
        f"directory {objects} is there; {REINDEX}"
    )
