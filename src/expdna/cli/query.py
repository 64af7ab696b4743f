"""Store queries: ``show``, ``runs``, ``twins``, ``find``.

A readable table by default; ``--json`` prints a JSON array of objects, each with at least
``run_id``, ``dna`` and ``generated_at``. No match is a negative answer: exit 1.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from expdna.cli.output import emit_json
from expdna.cli.store import StoreConfig, open_store, pass_config
from expdna.digest.refs import ref
from expdna.errors import InvalidInputError
from expdna.manifest.display import short
from expdna.manifest.times import parse_time
from expdna.store.entities import RunRecord, RunSummary, iso

if TYPE_CHECKING:
    from expdna.manifest.model import Manifest

_COLUMNS = (
    ("RUN", 30),
    ("DNA", 12),
    ("GENERATED", 20),
    ("STATE", 11),
    ("COMMIT", 7),
    ("ALGORITHM", 10),
    ("GPU", 24),
    ("DRIVER", 0),
)


def _cell(value: str | None, width: int) -> str:
    text = value or "-"
    if width and len(text) > width:
        text = text[: width - 1] + "…"
    return f"{text:<{width}}" if width else text


def table(runs: Sequence[RunSummary]) -> list[str]:
    lines = ["  ".join(_cell(name, width) for name, width in _COLUMNS).rstrip()]
    for run in runs:
        cells = (
            run.run_id,
            short(run.dna),
            iso(run.generated_at),
            run.shown_state,
            (run.commit or "")[:7],
            run.algorithm,
            run.gpu_model,
            run.driver_version,
        )
        line = "  ".join(_cell(c, w) for c, (_, w) in zip(cells, _COLUMNS, strict=True))
        if run.unknown:  # incomplete: say so on its line
            line = f"{line}  unknown: {run.unknown}"
        lines.append(line.rstrip())
    return lines


def emit_runs(
    ctx: click.Context,
    runs: Sequence[RunSummary],
    as_json: bool,
    unknown: dict[str, list[str]] | None = None,
) -> None:
    """Print ``runs`` as a table or JSON; exit 1 when there are none (naming the --where
    paths no run has, with the nearest known ones)."""
    if as_json:
        emit_json([run.to_dict() for run in runs])
    elif runs:
        for line in table(runs):
            click.echo(line)
    elif unknown:
        hints = [
            f"no run has {path}" + (f" (nearest: {', '.join(near)})" if near else "")
            for path, near in unknown.items()
        ]
        click.echo(f"no runs match: {'; '.join(hints)}", err=True)
    else:
        click.echo("no runs match", err=True)
    ctx.exit(0 if runs else 1)


def summary(record: RunRecord) -> list[str]:
    gpu = record.gpu_model or "-"
    stack = ", ".join(
        f"{name} {value}"
        for name, value in (
            ("driver", record.driver_version),
            ("CUDA", record.cuda_version),
            ("NCCL", record.nccl_version),
        )
        if value
    )
    lines = [
        f"run        {record.run_id}",
        f"dna        {record.dna}",
        f"generated  {iso(record.generated_at)}",
        f"recorded   {iso(record.recorded_at)}",
        # from the index: a status entry may have updated it since the manifest was stored
        f"state      {record.shown_state}",
        f"commit     {record.commit or '-'}",
        f"algorithm  {record.algorithm or '-'}",
        f"gpu        {gpu}{f' ({stack})' if stack else ''}",
        f"python     {record.python_version or '-'}",
        f"manifest   {ref(record.manifest_digest)}",
    ]
    lines += [f"  {name:<12}{short(digest)}" for name, digest in record.sections.items()]
    return lines


@click.command("show")
@click.argument("ref", metavar="RUN|DNA-PREFIX")
@click.option(
    "--inline", is_flag=True, help="Print the self-contained manifest file (patch texts inline)."
)
@click.option(
    "--manifest",
    "as_stored",
    is_flag=True,
    help="Print the manifest as stored (patch texts referenced by digest).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print a JSON array with the run's index record."
)
@pass_config
def show_command(
    config: StoreConfig, ref: str, inline: bool, as_stored: bool, as_json: bool
) -> None:
    """Show a recorded run: by run id, or the newest run of a DNA (prefix of >= 6 hex).

    `expdna show RUN --inline > m.json` writes a manifest that diff and check read.
    """
    if sum((inline, as_stored, as_json)) > 1:
        raise click.UsageError("--inline, --manifest and --json exclude each other")
    with open_store(config, read_only=True) as store:
        if inline or as_stored:
            from expdna.manifest.io import serialise

            click.echo(serialise(store.show(ref, inline=inline)), nl=False)
            return
        record = store.get(ref)
        tracking = {} if as_json else store.show(record.run_id).get("tracking")
    if as_json:
        emit_json([record.to_dict()])
    else:
        for line in summary(record) + tracker_lines(tracking):
            click.echo(line)


def tracker_lines(tracking: Any) -> list[str]:
    """The MLflow / W&B runs the expdna run is tied to (``tracking`` of the manifest)."""
    if not isinstance(tracking, dict):
        return []
    lines = []
    for name, info in sorted(tracking.items()):
        if isinstance(info, dict) and info.get("run_id"):
            where = info.get("tracking_uri") or info.get("project")
            lines.append(f"{name:<11}{info['run_id']}{f' ({where})' if where else ''}")
    return lines


@click.command("runs")
@click.option("--dna", "dna_prefix", metavar="PREFIX", help="Only runs whose DNA starts so.")
@click.option(
    "--where",
    "where",
    multiple=True,
    metavar="PATH=VALUE",
    help="A manifest leaf by its whole dotted path, e.g. training.algorithm=grpo "
    "(repeatable: all must hold); numbers compare by value "
    "(config.resolved_args.lr=1e-2 finds 0.01).",
)
@click.option("--since", metavar="DATE", help="Generated at or after DATE (ISO 8601, UTC).")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=50,
    show_default=True,
    help="At most N runs, newest first (0: all).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of runs.")
@pass_config
@click.pass_context
def runs_command(
    ctx: click.Context,
    config: StoreConfig,
    dna_prefix: str | None,
    where: tuple[str, ...],
    since: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """List recorded runs, newest first.

    STATE is how the run ended: completed, failed, interrupted, running; "unfinished" for a
    run still running after $EXPDNA_UNFINISHED_AFTER seconds (default 24 h) since it
    started, most often a process that died without a word; "unknown" for a run recorded
    before runs had a status. Select on it with --where status.state=failed (the
    shown words unfinished and unknown select too).
    """
    from expdna.store.queries import parse_where

    filters = [parse_where(w) for w in where]
    moment = parse_time(since, "--since") if since is not None else None
    with open_store(config, read_only=True) as store:
        runs = store.runs(
            dna_prefix=dna_prefix, where=filters, since=moment, limit=limit + 1 if limit else None
        )
        unknown = store.unknown_paths(filters) if filters and not runs else None
    if limit and len(runs) > limit:
        runs = runs[:limit]
        click.echo(f"(newest {limit} shown; --limit 0 for all)", err=True)
    emit_runs(ctx, runs, as_json, unknown)


@click.command("twins")
@click.argument("ref", metavar="RUN|DNA-PREFIX|MANIFEST")
@click.option(
    "--across-seeds",
    is_flag=True,
    help="Every run of the same setup whatever its seeds (the same family digest).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of runs.")
@pass_config
@click.pass_context
def twins_command(
    ctx: click.Context, config: StoreConfig, ref: str, across_seeds: bool, as_json: bool
) -> None:
    """Every recorded run with the same DNA as a run, a DNA prefix or a manifest file.

    A run whose manifest marks a section unknown (a collector failed or missed its deadline)
    is listed with "unknown: SECTION"; such runs share a DNA only with runs equally incomplete.
    """
    target: str | Manifest = ref
    if os.path.isfile(ref) or ref.endswith(".json"):
        # Only a manifest file loads the model (pydantic): a run id or DNA prefix does not.
        from expdna.manifest.io import load_manifest

        target = load_manifest(ref)
        _warn_if_edited(ref, target)
    with open_store(config, read_only=True) as store:
        runs = store.twins(target, across_seeds=across_seeds)
    emit_runs(ctx, runs, as_json)


def _warn_if_edited(path: str, manifest: Manifest) -> None:
    """Say so on stderr when a file's stored DNA is not that of its content (as diff does)."""
    from expdna.manifest.dna import verify_dna

    if manifest.dna is None:
        return
    try:
        actual = verify_dna(manifest).value
    except ValueError as exc:  # a DNA version from a newer expdna: record refuses it too
        raise InvalidInputError(f"{path}: {exc}") from None
    if actual != manifest.dna.value:
        click.echo(
            f"expdna: warning: {path}: stored DNA {short(manifest.dna.value)} does not match "
            f"its content ({short(actual)}); looking for twins of the recomputed one",
            err=True,
        )


@click.command("find")
@click.option("--vbios", multiple=True, metavar="V", help="Any GPU has this VBIOS version.")
@click.option("--driver", multiple=True, metavar="V", help="NVIDIA driver version.")
@click.option("--gpu", multiple=True, metavar="MODEL", help="GPU model name (exact).")
@click.option("--cuda", multiple=True, metavar="V", help="CUDA version.")
@click.option("--nccl", multiple=True, metavar="V", help="NCCL version.")
@click.option(
    "--where",
    "where",
    multiple=True,
    metavar="PATH=VALUE",
    help="Any manifest leaf; list indexes dropped (hardware.gpus.name=...).",
)
@click.option(
    "--limit", type=click.IntRange(min=0), metavar="N", help="At most N runs (0: all, as without)."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of runs.")
@pass_config
@click.pass_context
def find_command(
    ctx: click.Context,
    config: StoreConfig,
    vbios: tuple[str, ...],
    driver: tuple[str, ...],
    gpu: tuple[str, ...],
    cuda: tuple[str, ...],
    nccl: tuple[str, ...],
    where: tuple[str, ...],
    limit: int | None,
    as_json: bool,
) -> None:
    """Runs matching every filter given (filters AND together), newest first.

    Values match exactly, as text: `--where training.algorithm=grpo`; a VALUE that reads
    as a number matches any number equal to it (`--where config.resolved_args.lr=1e-2`
    finds 0.01, `training.global_batch_size=16` finds 16.0). A path no run has is named,
    with the nearest paths that runs do have.
    """
    from expdna.store.queries import named_filter, parse_where

    named = {"vbios": vbios, "driver": driver, "gpu": gpu, "cuda": cuda, "nccl": nccl}
    filters = [named_filter(name, v) for name, values in named.items() for v in values]
    filters += [parse_where(w) for w in where]
    if not filters:
        raise click.UsageError("give at least one filter (--vbios, --driver, ..., --where)")
    with open_store(config, read_only=True) as store:
        runs = store.find(*filters, limit=limit or None)
        unknown = store.unknown_paths(filters) if not runs else None
    emit_runs(ctx, runs, as_json, unknown)
