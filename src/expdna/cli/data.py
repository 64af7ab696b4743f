"""``expdna data verify``: does the data on disk still match what a manifest recorded?

Also the progress line that ``generate`` and ``verify`` show on a terminal while a large
dataset is hashed (the library never prints; it hands :class:`Progress` to a callback).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from expdna.cli.output import emit_json
from expdna.cli.params import GivenPath
from expdna.cli.refs import load_manifests
from expdna.cli.store import StoreConfig, pass_config
from expdna.collectors.data import Progress
from expdna.compare.data import DatasetCheck, verify_data
from expdna.errors import ExpdnaError

if TYPE_CHECKING:
    from expdna.store.objects.interface import ObjectStore

#: A dataset is large, and gets a progress line, above either of these (to be hashed).
LARGE_FILES = 1000
LARGE_BYTES = 1 << 30


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def tty_progress() -> Callable[[Progress], None] | None:
    """A renderer of one self-rewriting stderr line, or None when stderr is not a TTY."""
    stream = sys.stderr
    if not stream.isatty():
        return None
    shown = False

    def render(p: Progress) -> None:
        nonlocal shown
        if p.done:
            if shown:
                stream.write("\r\x1b[K")
                stream.flush()
                shown = False
            return
        if p.files_total <= LARGE_FILES and p.bytes_total <= LARGE_BYTES:
            return
        share = p.bytes_done / p.bytes_total if p.bytes_total else p.files_done / p.files_total
        stream.write(
            f"\rexpdna: hashing {p.root}: {p.files_done:,}/{p.files_total:,} files, "
            f"{_size(p.bytes_done)} of {_size(p.bytes_total)} ({share:.0%})\x1b[K"
        )
        stream.flush()
        shown = True

    return render


def _parse_roots(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        old, sep, new = value.partition("=")
        if not sep or not old or not new:
            raise click.BadParameter(f"{value!r} is not OLD=NEW", ctx=ctx, param=param)
        pairs.append((old, new))
    return pairs


def _store_listings(config: StoreConfig) -> Callable[[str], bytes | None]:
    """Listing blobs from the store's objects, when there are any (read lazily)."""
    opened: list[ObjectStore] = []

    def read(digest: str) -> bytes | None:
        from expdna.store.objects.place import open_objects

        try:
            if not opened:
                opened.append(open_objects(config))
            objects = opened[0]
            if not objects.exists():
                return None
            return objects.read(digest)
        except (ExpdnaError, OSError):
            return None

    return read


def _counts(values: dict[str, object] | None) -> str:
    if not values:
        return "?"
    files, size = values.get("files"), values.get("bytes")
    shown = _size(size) if isinstance(size, int) else "?"
    count = "?" if files is None else f"{files} file{'' if files == 1 else 's'}"
    return f"{count}, {shown}"


def _lines(check: DatasetCheck) -> list[str]:
    where = check.root if check.path in (None, check.root) else f"{check.root} (at {check.path})"
    head = f"{check.status:<12} {where}"
    if check.status == "ok":
        return [f"{head}: {_counts(check.current)}"]
    if check.status == "changed":
        head += f": {_counts(check.recorded)} recorded, {_counts(check.current)} now"
    lines = [head]
    for kind in ("changed", "missing", "new"):
        lines += [f"  {kind:<8} {path}" for path in getattr(check, kind)]
    if check.note:
        lines.append(f"  ({check.note})")
    return lines


@click.group("data")
def data_group() -> None:
    """Datasets recorded in manifests."""


@data_group.command("verify")
@click.argument("manifest", type=GivenPath(path_type=Path, readable=False), metavar="MANIFEST")
@click.option(
    "--data-root",
    "data_roots",
    multiple=True,
    metavar="OLD=NEW",
    callback=_parse_roots,
    help="Look for datasets recorded under OLD in NEW instead (repeatable).",
)
@click.option(
    "--no-cache",
    "no_cache",
    is_flag=True,
    help="Hash every file again instead of trusting the digest cache.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print {"ok", "datasets": [{"root", "path", "status", "recorded", "current", '
    '"detail", "changed", "missing", "new", "note"}]}.',
)
@pass_config
@click.pass_context
def verify_command(
    ctx: click.Context,
    config: StoreConfig,
    manifest: Path,
    data_roots: list[tuple[str, str]],
    no_cache: bool,
    as_json: bool,
) -> None:
    """Re-digest every dataset MANIFEST recorded; exit 1 naming each file that differs.

    MANIFEST is a file, or a run id / DNA prefix (>= 6 hex) recorded in the store.

    A launcher's gate: exit 0 when every dataset matches, 1 when any file was changed,
    removed or added (or a dataset cannot be found or read), 2 on an unusable manifest.
    Files are named when the recorded listing is at hand (embedded in the manifest for
    small datasets, in the local digest cache, or in the store); otherwise the counts that
    differ are shown.
    """
    recorded = load_manifests([str(manifest)], config)[0]
    datasets = recorded.to_dict()["data"]["datasets"]
    report = verify_data(
        datasets,
        data_roots=data_roots,
        use_cache=not no_cache,
        progress=tty_progress(),
        listing_source=_store_listings(config),
    )
    if as_json:
        emit_json({"manifest": str(manifest), **report.to_dict()})
    else:
        for check in report.datasets:
            for line in _lines(check):
                click.echo(line)
        bad = sum(check.status != "ok" for check in report.datasets)
        total = len(report.datasets)
        click.echo(
            f"verdict: MISMATCH ({bad} of {total} datasets)"
            if bad
            else f"verdict: OK ({total} dataset{'s' if total != 1 else ''} match)"
        )
    ctx.exit(0 if report.ok else 1)
