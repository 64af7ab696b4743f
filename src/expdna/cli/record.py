"""``expdna record``: manifest files into the store, idempotent per run id."""

from __future__ import annotations

from pathlib import Path

import click

from expdna.cli.output import emit_json
from expdna.cli.store import StoreConfig, open_store, pass_config
from expdna.manifest.dna import short
from expdna.manifest.io import load_manifest
from expdna.manifest.model import Manifest
from expdna.store.entities import RecordResult


def result_line(result: RecordResult) -> str:
    where = f"  ({result.source})" if result.source else ""
    if result.status == "recorded":
        return f"recorded {result.run_id}  dna {short(result.dna or '')}{where}"
    return f"skipped  {result.run_id}  (already recorded){where}"


@click.command("record")
@click.argument("manifests", nargs=-1, type=click.Path(path_type=Path), metavar="MANIFEST...")
@click.option(
    "--scan",
    "scan",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="Record every manifest_*.json below DIR (already recorded runs are skipped).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print a JSON array: run_id, dna, generated_at, status, source, message.",
)
@pass_config
@click.pass_context
def record_command(
    ctx: click.Context,
    config: StoreConfig,
    manifests: tuple[Path, ...],
    scan: Path | None,
    as_json: bool,
) -> None:
    """Record manifest files into the store (--store / EXPDNA_STORE).

    Recording a run twice changes nothing. A manifest whose dna.value does not match its
    content is refused. With MANIFEST arguments every file is checked first and nothing
    is written if one is bad; with --scan a bad file is reported and the rest recorded.
    Exit 0 when every manifest was recorded or skipped, 2 when any failed.
    """
    if bool(manifests) == (scan is not None):
        raise click.UsageError("give MANIFEST files or --scan DIR (one of them)")
    if scan is not None and not scan.is_dir():
        raise click.BadParameter(f"{scan}: no such directory", param_hint="--scan")
    # files are read before the store is opened: a bad one leaves no store behind
    loaded = [load_manifest(path) for path in manifests]
    with open_store(config) as store:
        if scan is not None:
            results = list(store.scan(scan))
        else:
            # one batch: every file is checked before anything is written
            results = store.record_many(
                loaded, sources=[str(p) for p in manifests], batch_size=len(loaded)
            )
    failed = [r for r in results if r.status in ("failed", "conflict")]
    if as_json:
        emit_json([r.to_dict() for r in results])
    else:
        for result in results:
            if result.status in ("recorded", "skipped"):
                click.echo(result_line(result))
        recorded = sum(r.status == "recorded" for r in results)
        skipped = sum(r.status == "skipped" for r in results)
        click.echo(f"recorded {recorded}, skipped {skipped}, failed {len(failed)}")
    for result in failed:
        click.echo(f"expdna: error: {result.message}", err=True)
    ctx.exit(2 if failed else 0)


def record_generated(config: StoreConfig, manifest: Manifest) -> RecordResult:
    """``generate --record``: record the manifest just written; one line on stderr says so.

    The manifest in memory is recorded, not the file: its patch text is whole even where
    the file had to shorten it under the size cap.
    """
    with open_store(config) as store:
        result = store.record(manifest, source=None)
        where = store.root
    click.echo(f"expdna: {result.status} run {result.run_id} in {where}", err=True)
    return result
