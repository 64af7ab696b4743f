"""``expdna db upgrade`` and ``expdna db current``: the index schema revision."""

from __future__ import annotations

import click

from expdna.cli.store import StoreConfig, open_store, pass_config


@click.group("db")
def db_group() -> None:
    """The index database: its schema revision and upgrades (alembic, shipped with expdna)."""


@db_group.command("upgrade")
@pass_config
def upgrade_command(config: StoreConfig) -> None:
    """Upgrade the index (--index-url, or the store's SQLite) to this expdna's schema."""
    with open_store(config, checked=False) as store:
        before, after = store.upgrade_index()
        where = store.index_location
        filled = store.fill_families()
    if before == after:
        click.echo(f"index {where}: already at revision {after}")
    else:
        click.echo(f"index {where}: upgraded from {before or '(empty)'} to {after}")
    if filled:
        click.echo(f"family and setup digests filled in for {filled} runs recorded before them")


@db_group.command("current")
@click.option(
    "--json", "as_json", is_flag=True, help='Print {"revision", "head", "current", "index"}.'
)
@pass_config
@click.pass_context
def current_command(ctx: click.Context, config: StoreConfig, as_json: bool) -> None:
    """Print the index's schema revision; exit 1 when it is not this expdna's head."""
    with open_store(config, checked=False, read_only=True) as store:
        found, head = store.index_revision()
        where = store.index_location
    if as_json:
        from expdna.cli.output import emit_json

        emit_json({"revision": found, "head": head, "current": found == head, "index": where})
        ctx.exit(0 if found == head else 1)
    if found == head:
        click.echo(f"{found} (head)  index {where}")
        return
    click.echo(f"{found or '(empty)'} (head is {head}: run `expdna db upgrade`)  index {where}")
    ctx.exit(1)
