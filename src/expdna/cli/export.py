"""``expdna export --parquet FILE``: one row per run, for pandas or DuckDB."""

from __future__ import annotations

from pathlib import Path

import click

from expdna.cli.params import GivenPath
from expdna.cli.store import StoreConfig, open_store, pass_config
from expdna.manifest.times import parse_time


@click.command("export")
@click.option(
    "--parquet",
    "parquet",
    required=True,
    type=GivenPath(path_type=Path),
    metavar="FILE",
    help="Write a Parquet file (replaced atomically).",
)
@click.option(
    "--where",
    "where",
    multiple=True,
    metavar="PATH=VALUE",
    help="Only runs where a manifest leaf holds VALUE (repeatable: all must hold).",
)
@click.option("--since", metavar="DATE", help="Generated at or after DATE (ISO 8601, UTC).")
@click.option(
    "--column",
    "column",
    multiple=True,
    metavar="PATH",
    help="Add a string column: each run's value at this manifest path, e.g. "
    "config.config_values.exp.yaml.optimizer.lr (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help='Print {"runs", "path"}.')
@pass_config
def export_command(
    config: StoreConfig,
    parquet: Path,
    where: tuple[str, ...],
    since: str | None,
    column: tuple[str, ...],
    as_json: bool,
) -> None:
    """Export runs, oldest first: run_id, dna, generated_at, commit, algorithm, gpu_model,
    driver, cuda, nccl, python, state, the seven section digests and a float column
    metric_<name> per final metric.

    Each --column PATH adds a string column named PATH: the run's value at that manifest
    path, as find --where matches it (a key inside a config file:
    config.config_values.exp.yaml.optimizer.lr).

    \b
    duckdb -c "SELECT gpu_model, avg(metric_final_loss) FROM 'runs.parquet' GROUP BY 1"
    """
    from expdna.store.queries import parse_where

    filters = [parse_where(w) for w in where]
    moment = parse_time(since, "--since") if since is not None else None
    with open_store(config, read_only=True) as store:
        count = store.export_parquet(parquet, where=filters, since=moment, columns=column)
    if as_json:
        from expdna.cli.output import emit_json

        emit_json({"runs": count, "path": str(parquet)})
        return
    click.echo(f"exported {count} runs to {parquet}")
