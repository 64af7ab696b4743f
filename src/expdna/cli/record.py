"""``expdna record``: manifest files into the store, idempotent per run id."""

from __future__ import annotations

from pathlib import Path

import click

from expdna.cli.output import emit_json
from expdna.cli.params import GivenPath
from expdna.cli.store import StoreConfig, open_store, pass_config
from expdna.errors import ExpdnaError
from expdna.manifest.dna import short
from expdna.manifest.io import load_manifest
from expdna.manifest.model import Manifest
from expdna.store.entities import RecordResult


def result_line(result: RecordResult) -> str:
    where = f"  ({result.source})" if result.source else ""
    if result.status == "recorded":
        return f"recorded {result.run_id}  dna {short(result.dna or '')}{where}"
    return f"skipped  {result.run_id}  (already recorded){where}"


def _failed(source: str, exc: ExpdnaError) -> RecordResult:
    return RecordResult(
        run_id="", dna=None, generated_at=None, status="failed", source=source, message=str(exc)
    )


def _load_each(paths: tuple[Path, ...]) -> list[tuple[str, Manifest] | RecordResult]:
    """Each file loaded, or its failure; files are read before the store is opened, so
    a call whose every file is bad leaves no store behind."""
    loaded: list[tuple[str, Manifest] | RecordResult] = []
    for path in paths:
        try:
            loaded.append((str(path), load_manifest(path)))
        except ExpdnaError as exc:
            loaded.append(_failed(str(path), exc))
    return loaded


def _record_files(config: StoreConfig, paths: tuple[Path, ...]) -> list[RecordResult]:
    loaded = _load_each(paths)
    good = [item for item in loaded if isinstance(item, tuple)]
    recorded: list[RecordResult] = []
    if good:
        with open_store(config) as store:
            recorded = list(store.record_each(good))
    results = iter(recorded)
    return [next(results) if isinstance(item, tuple) else item for item in loaded]


@click.command("record")
# readable=False: an unreadable file is one line naming it (expdna reads it), not a usage error
@click.argument(
    "manifests", nargs=-1, type=GivenPath(path_type=Path, readable=False), metavar="MANIFEST..."
)
@click.option(
    "--scan",
    "scan",
    is_flag=True,
    help="Record every manifest_*.json below the one DIR given (already recorded runs are "
    "skipped); every other .json file below DIR is named on stderr as passed over, with "
    "the reason. A flag, so `record --scan --quiet DIR` reads as it says.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print a JSON array: run_id, dna, generated_at, status, source, message.",
)
@click.option(
    "-q", "--quiet", is_flag=True, help="Print only errors (one line per file that failed)."
)
@pass_config
@click.pass_context
def record_command(
    ctx: click.Context,
    config: StoreConfig,
    manifests: tuple[Path, ...],
    scan: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """Record manifest files into the store (--store / EXPDNA_STORE).

    Recording a run twice changes nothing. Each file is judged on its own: every valid
    manifest is recorded, and each one that is not (unreadable, malformed, a DNA that does
    not match its content, a run id recorded with other content, a lineage that would make
    a cycle) is named on stderr with the reason, one line per file. Exit 0 when every
    manifest was recorded or skipped, 2 when any failed.
    """
    if not manifests:
        raise click.UsageError("give MANIFEST files or --scan DIR (one of them)")
    if scan:
        if len(manifests) != 1:
            raise click.UsageError("--scan takes one directory (DIR), not manifest files")
        if not manifests[0].is_dir():
            why = "not a directory" if manifests[0].exists() else "no such directory"
            raise click.BadParameter(f"{manifests[0]}: {why}", param_hint="--scan")

    def passed_over(path: Path, reason: str) -> None:
        if not quiet:
            click.echo(f"expdna: passed over {path}: {reason}", err=True)

    if scan:
        with open_store(config) as store:
            results = list(store.scan(manifests[0], passed_over=passed_over))
    else:
        results = _record_files(config, manifests)
    failed = [r for r in results if r.status in ("failed", "conflict")]
    if as_json:
        emit_json([r.to_dict() for r in results])
    elif not quiet:
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
    from expdna.store.deferred import LogWriter, usable

    if usable(config):  # as the training hook: objects and a log entry, no index here
        writer = LogWriter(config)
        writer.record(manifest)
        click.echo(f"expdna: recorded run {manifest.run_id} in {writer.root}", err=True)
        return RecordResult(
            run_id=manifest.run_id,
            dna=manifest.dna.value if manifest.dna else None,
            generated_at=manifest.generated_at,
            status="recorded",
            source=None,
        )
    with open_store(config) as store:
        result = store.record(manifest, source=None)
        where = store.root
    click.echo(f"expdna: {result.status} run {result.run_id} in {where}", err=True)
    return result
