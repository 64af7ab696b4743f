"""``expdna generate``: collect, write the manifest, print its path and DNA."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from expdna.api import generate
from expdna.cli.data import tty_progress
from expdna.cli.output import emit_json
from expdna.cli.params import GivenPath
from expdna.cli.record import record_generated
from expdna.cli.store import StoreConfig, pass_config
from expdna.errors import ExpdnaError, InvalidInputError
from expdna.manifest.dna import short

if TYPE_CHECKING:
    from expdna.manifest.model import Manifest


#: The options ``generate`` and ``run`` share: what to collect and how long to wait.
COLLECT_OPTIONS = (
    click.option(
        "--repo",
        "repos",
        multiple=True,
        type=GivenPath(path_type=Path),
        metavar="PATH",
        help="Another git repository to record (repeatable); the one containing cwd is always in.",
    ),
    click.option(
        "--data",
        "data",
        multiple=True,
        # the text as given: a Path would fold `https://u:pw@h` into `https:/u:pw@h`, which
        # no longer reads as a URL, so its credentials would escape redaction
        type=GivenPath(path_type=str),
        metavar="PATH",
        help="A data file or directory to digest (repeatable).",
    ),
    click.option(
        "--dna-ignore",
        "dna_ignore",
        multiple=True,
        metavar="GLOB",
        help="Leave dotted paths matching GLOB out of the DNA, e.g. 'config.resolved_args.seed' "
        "(a seed argument's path also leaves out training.seeds.* derived from it).",
    ),
    click.option(
        "--deadline",
        type=click.FloatRange(min=0.1),
        default=4.0,
        show_default=True,
        metavar="SECONDS",
        help="Time each collector gets before it is abandoned.",
    ),
    click.option(
        "--no-cache",
        "no_cache",
        is_flag=True,
        help="Hash every --data file again instead of trusting the digest cache.",
    ),
)


def collect_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Apply :data:`COLLECT_OPTIONS` (``repos``, ``data``, ``dna_ignore``, ``deadline``,
    ``no_cache``)."""
    for option in reversed(COLLECT_OPTIONS):
        command = option(command)
    return command


def _check_inputs(repos: Sequence[Path], data: Sequence[str]) -> None:
    """Refuse what a typo makes of the options, before anything is collected or written: a
    repository that is not there would be dropped with a warning (the DNA as if it were
    never asked for), and an empty --data would digest the whole working directory."""
    for repo in repos:
        if not repo.is_dir():
            raise InvalidInputError(f"--repo {repo}: no such directory")
    if any(not path.strip() for path in data):
        raise InvalidInputError("--data '': an empty path names no data")


def collect_and_write(
    argv: Sequence[str],
    output: Path | None,
    *,
    repos: Sequence[Path],
    data: Sequence[str],
    dna_ignore: Sequence[str],
    deadline: float,
    no_cache: bool,
    store: StoreConfig | None = None,
) -> tuple[Path, Manifest]:
    """Collect and write the manifest of ``argv``; each unknown section is a warning line.
    Checkpoints pinned in ``store`` (a local one) are not code."""
    _check_inputs(repos, data)
    path, manifest = generate(
        argv,
        output=output,
        repos=repos,
        data=data,
        deadline_s=deadline,
        dna_ignore=dna_ignore,
        use_cache=not no_cache,
        progress=tty_progress(),
        pinned_stores=[store.root] if store is not None and store.remote is None else [],
    )
    for section, reason in (manifest.unknown or {}).items():
        click.echo(f"expdna: warning: section {section} is unknown: {reason}", err=True)
    return path, manifest


@click.command("generate")
@click.option(
    "-o",
    "--output",
    type=GivenPath(path_type=Path),
    metavar="PATH",
    help="Manifest file to write, or a directory for the default name "
    "(default: ./manifest_<run_id>.json).",
)
@collect_options
@click.option("--json", "as_json", is_flag=True, help='Print {"path", "run_id", "dna", "unknown"}.')
@click.option(
    "--record",
    "record",
    is_flag=True,
    help="Also record the manifest into the store (--store, --index-url).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 1 when a DNA section is unknown (a collector failed or missed its deadline); "
    "the manifest is still written, with the section marked unknown.",
)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED, metavar="[-- ARGV...]")
@pass_config
def generate_command(
    config: StoreConfig,
    output: Path | None,
    repos: tuple[Path, ...],
    data: tuple[str, ...],
    dna_ignore: tuple[str, ...],
    deadline: float,
    no_cache: bool,
    as_json: bool,
    record: bool,
    strict: bool,
    argv: tuple[str, ...],
) -> None:
    """Write a manifest describing this checkout and the command ARGV.

    ARGV (after --) is the training command; its --key value pairs become the resolved
    config. Without it the manifest describes the environment alone.

    A section a collector could not finish is marked unknown in the manifest and its DNA
    (a warning names it); --strict makes that exit 1.
    """
    path, manifest = collect_and_write(
        argv,
        output,
        repos=repos,
        data=data,
        dna_ignore=dna_ignore,
        deadline=deadline,
        no_cache=no_cache,
        store=config,
    )
    assert manifest.dna is not None
    unknown = manifest.unknown or {}
    if record:
        try:
            record_generated(config, manifest)
        except (ExpdnaError, OSError):  # the file is written: say so before the store's error
            click.echo(f"expdna: wrote {path} (run {manifest.run_id}); not recorded:", err=True)
            raise
    if as_json:
        emit_json(
            {
                "path": str(path.resolve()),
                "run_id": manifest.run_id,
                "dna": manifest.dna.value,
                "unknown": dict(unknown),
            }
        )
    else:
        click.echo(f"wrote {path}")
        click.echo(f"dna {short(manifest.dna.value)}  run {manifest.run_id}")
    if strict and unknown:
        raise SystemExit(1)
