"""Lineage: edges from a manifest's ``lineage`` list and from ``expdna link``, walked both
ways, transitively and safely through cycles; on SQLite, PostgreSQL and the command."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from expdna.errors import InvalidInputError, ManifestError
from expdna.manifest.dna import compute_dna
from expdna.manifest.io import manifest_from_dict, write_manifest
from expdna.manifest.model import Manifest
from expdna.store import Store
from expdna.store.errors import RunNotFoundError
from tests.factories import invoke, rows, run, synthetic_doc


def child(i: int, *edges: tuple[str, str]) -> Manifest:
    """Manifest ``i`` whose ``lineage`` names ``edges`` (relation, parent run id)."""
    doc = synthetic_doc(i)
    if edges:
        doc["lineage"] = [{"relation": r, "parent": p} for r, p in edges]
    manifest = manifest_from_dict(doc)
    manifest.dna = compute_dna(manifest)
    return manifest


def rid(i: int) -> str:
    return str(synthetic_doc(i)["run_id"])


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "store") as opened:
        yield opened


def chain(store: Store) -> None:
    """0 <- 1 (resumed_from) <- 2 (resumed_from); 3 reruns 1; 4 derives from 2 and 3."""
    store.record_many(
        [
            child(0),
            child(1, ("resumed_from", rid(0))),
            child(2, ("resumed_from", rid(1))),
            child(3, ("rerun_of", rid(1))),
            child(4, ("derived_from", rid(2)), ("derived_from", rid(3))),
        ]
    )


def _edges(edges: Any) -> list[tuple[str, int, str, str]]:
    return [(e.run_id, e.depth, e.relation, e.source) for e in edges]


def test_lineage_from_manifests_is_outside_the_dna() -> None:
    with_edges = child(1, ("resumed_from", rid(0)))
    assert with_edges.lineage is not None and with_edges.lineage[0].parent == rid(0)
    assert compute_dna(with_edges) == compute_dna(child(1))
    assert "lineage" not in child(1).to_dict()  # absent stays absent: old files unchanged
    with pytest.raises(ManifestError, match="relation"):
        manifest_from_dict({**synthetic_doc(1), "lineage": [{"relation": "x", "parent": "a"}]})


def test_ancestors_and_descendants_transitively(store: Store) -> None:
    chain(store)
    report = store.lineage(rid(4))
    assert report.dna == store.get(rid(4)).dna
    assert _edges(report.ancestors) == [
        (rid(2), 1, "derived_from", "manifest"),
        (rid(3), 1, "derived_from", "manifest"),
        (rid(1), 2, "rerun_of", "manifest"),
        (rid(1), 2, "resumed_from", "manifest"),
        (rid(0), 3, "resumed_from", "manifest"),
    ]
    assert report.descendants == []
    assert report.ancestors[0].dna == store.get(rid(2)).dna
    down = store.lineage(rid(0))
    assert [(e.run_id, e.depth) for e in down.descendants] == [
        (rid(1), 1),
        (rid(2), 2),
        (rid(3), 2),
        (rid(4), 3),
        (rid(4), 3),
    ]
    assert store.lineage(rid(1)).ancestors[0].run_id == rid(0)


def test_link_adds_an_edge_once_and_refuses_cycles(store: Store) -> None:
    chain(store)
    store.record(child(5))
    assert store.link(rid(4), rid(5), "derived_from") is True
    assert store.link(rid(4), rid(5), "derived_from") is False  # idempotent
    [edge] = store.lineage(rid(5)).ancestors[:1]
    assert (edge.run_id, edge.relation, edge.source) == (rid(4), "derived_from", "link")
    with pytest.raises(InvalidInputError, match="cycle"):
        store.link(rid(5), rid(0), "rerun_of")  # 0 is an ancestor of 5
    with pytest.raises(InvalidInputError, match="itself"):
        store.link(rid(5), rid(5), "rerun_of")
    with pytest.raises(InvalidInputError, match="unknown relation"):
        store.link(rid(0), rid(5), "copied_from")
    with pytest.raises(RunNotFoundError):
        store.link(rid(0), "20990101_000000_nogit_x", "rerun_of")
    # an edge the manifest recorded later is kept as linked (first source wins)
    assert store.link(rid(0), rid(1), "resumed_from") is False


def test_manifests_that_name_each_other_do_not_make_a_cycle(store: Store) -> None:
    # in one batch: the first is recorded, the second would close the cycle and is refused
    results = store.record_many(
        [child(7, ("rerun_of", rid(8))), child(8, ("rerun_of", rid(7))), child(9)]
    )
    assert [r.status for r in results] == ["recorded", "failed", "recorded"]
    assert results[1].message is not None and "would make a cycle" in results[1].message
    report = store.lineage(rid(7))
    assert _edges(report.ancestors) == [(rid(8), 1, "rerun_of", "manifest")]
    assert report.descendants == []
    # across calls, and through a longer loop: 12 -> 11 -> 10 -> 12
    store.record(child(11, ("rerun_of", rid(10))))
    store.record(child(12, ("rerun_of", rid(11))))
    with pytest.raises(InvalidInputError, match="would make a cycle"):
        store.record(child(10, ("derived_from", rid(12))))
    assert [r.run_id for r in store.runs()].count(rid(10)) == 0


def test_a_parent_recorded_after_its_child(store: Store) -> None:
    store.record(child(11, ("resumed_from", rid(10))))
    report = store.lineage(rid(10))  # not recorded, but named by an edge
    assert report.dna is None and [e.run_id for e in report.descendants] == [rid(11)]
    assert store.lineage(rid(11)).ancestors[0].dna is None
    store.record(child(10))
    assert store.lineage(rid(11)).ancestors[0].dna == store.get(rid(10)).dna
    with pytest.raises(RunNotFoundError):
        store.lineage("20990101_000000_nogit_x")


def test_a_malformed_lineage_list_is_refused_and_nothing_written(store: Store) -> None:
    doc = synthetic_doc(20)
    for bad in (
        [{"relation": "resumed_from", "parent": "../x"}],
        [{"relation": "resumed_from", "parent": doc["run_id"]}],
    ):
        manifest = manifest_from_dict({**doc, "lineage": bad})
        with pytest.raises(InvalidInputError, match="lineage"):
            store.record(manifest)
    assert store.runs() == []


def test_lineage_and_link_through_the_installed_command(tmp_path: Path) -> None:
    root = tmp_path / "store"
    (tmp_path / "runs").mkdir()
    for manifest in (child(0), child(1, ("resumed_from", rid(0))), child(2)):
        write_manifest(manifest, tmp_path / "runs" / f"manifest_{manifest.run_id}.json")
    assert run(root, "record", "--scan", str(tmp_path / "runs")).returncode == 0
    linked = run(root, "link", rid(1), rid(2), "--as", "rerun_of")
    assert linked.returncode == 0, linked.stderr
    assert linked.stdout.strip() == f"linked: {rid(2)} rerun_of {rid(1)}"
    shown = run(root, "lineage", rid(0))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[1:3] == ["ancestors: none", "descendants:"]
    assert lines[3].split()[:2] == ["resumed_from", rid(1)]
    assert lines[4].split()[:2] == ["rerun_of", rid(2)] and f"via {rid(1)}" in lines[4]
    as_json = rows(invoke(root, "lineage", rid(2), "--json").stdout)
    assert [(e["run_id"], e["direction"], e["depth"]) for e in as_json] == [
        (rid(1), "ancestor", 1),
        (rid(0), "ancestor", 2),
    ]
    assert {"run_id", "dna", "generated_at", "relation", "source"} <= as_json[0].keys()
    assert json.loads(invoke(root, "lineage", rid(0), "--json").stdout)[0]["source"] == ("manifest")
    assert invoke(root, "lineage", "20990101_000000_nogit_x").exit_code == 1
    assert invoke(root, "link", rid(2), rid(0), "--as", "rerun_of").exit_code == 2  # cycle
    assert invoke(root, "link", rid(0), rid(2), "--as", "sibling_of").exit_code == 2


@pytest.mark.postgres
def test_lineage_on_postgres(pg_store: Store) -> None:
    chain(pg_store)
    assert [e.run_id for e in pg_store.lineage(rid(0)).descendants][:2] == [rid(1), rid(2)]
    assert pg_store.link(rid(0), rid(4), "rerun_of") is True
    assert len(pg_store.lineage(rid(4)).ancestors) == 6
    results = pg_store.record_many([child(7, ("rerun_of", rid(8))), child(8, ("rerun_of", rid(7)))])
    assert [r.status for r in results] == ["recorded", "failed"]
    assert pg_store.lineage(rid(8)).ancestors == []
