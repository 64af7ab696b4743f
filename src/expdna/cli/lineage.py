"""``expdna lineage`` and ``expdna link``: runs that resume, rerun or derive from others."""

from __future__ import annotations

from collections.abc import Sequence

import click

from expdna.cli.output import emit_json
from expdna.cli.store import StoreConfig, open_store, pass_config
from expdna.manifest.display import short
from expdna.manifest.lineage import RELATIONS
from expdna.store.entities import LineageEdge, LineageReport


def _edge_line(edge: LineageEdge) -> str:
    dna = short(edge.dna) if edge.dna else "(not recorded)"
    via = edge.child if edge.direction == "ancestor" else edge.parent
    hops = f"depth {edge.depth}" + (f", via {via}" if edge.depth > 1 else "")
    return f"  {edge.relation:<13} {edge.run_id:<30}  {dna:<14}  ({hops})"


def _section(title: str, edges: Sequence[LineageEdge]) -> list[str]:
    if not edges:
        return [f"{title}: none"]
    return [f"{title}:"] + [_edge_line(edge) for edge in edges]


def render(report: LineageReport) -> list[str]:
    dna = short(report.dna) if report.dna else "(not recorded)"
    return [
        f"run {report.run_id}  dna {dna}",
        *_section("ancestors", report.ancestors),
        *_section("descendants", report.descendants),
    ]


@click.command("lineage")
@click.argument("ref", metavar="RUN")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print a JSON array of edges: run_id, dna, generated_at, direction, depth, "
    "relation, parent, child, source.",
)
@pass_config
def lineage_command(config: StoreConfig, ref: str, as_json: bool) -> None:
    """Ancestors and descendants of a run (a run id or DNA prefix), transitively.

    Relations: resumed_from, rerun_of, derived_from; from the manifest's `lineage` list
    or `expdna link`. Exit 1 when the run is unknown.
    """
    with open_store(config, read_only=True) as store:
        report = store.lineage(ref)
    if as_json:
        emit_json([edge.to_dict() for edge in (*report.ancestors, *report.descendants)])
        return
    for line in render(report):
        click.echo(line)


@click.command("link")
@click.argument("parent", metavar="PARENT")
@click.argument("child", metavar="CHILD")
@click.option(
    "--as", "relation", required=True, type=click.Choice(RELATIONS), help="CHILD <relation> PARENT."
)
@click.option(
    "--json", "as_json", is_flag=True, help='Print {"added", "parent", "child", "relation"}.'
)
@pass_config
def link_command(
    config: StoreConfig, parent: str, child: str, relation: str, as_json: bool
) -> None:
    """Record that CHILD resumed from, reran or derives from PARENT (both recorded runs)."""
    with open_store(config) as store:
        added = store.link(parent, child, relation)
    if as_json:
        emit_json({"added": added, "parent": parent, "child": child, "relation": relation})
        return
    click.echo(f"{'linked' if added else 'already linked'}: {child} {relation} {parent}")
