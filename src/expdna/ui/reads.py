"""What the pages ask the store beyond the CLI's own queries, read-only.

Each function takes an open read connection (or the :class:`Store`) and returns plain
values. The CLI's answers (``runs``, ``twins``, ``find``, ``diff``, ``stability``,
``lineage``, ``which``) come from the same library functions the commands call; what is
here is only what a page adds: a page of runs with their metrics, the fleet's counts, a
run's pins, and a checkpoint looked up by name or digest without touching the filesystem.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select

from expdna.digest.refs import is_tagged, parse_digest
from expdna.store import pins as pins_mod
from expdna.store.entities import PinRecord, RunSummary
from expdna.store.index.bulk import chunks
from expdna.store.index.models import (
    Fact,
    FactPath,
    FactSetMember,
    FactValue,
    Metric,
    Run,
    RunFactSet,
)
from expdna.store.index.selects import SUMMARY_COLUMNS, filtered
from expdna.store.queries import Filter, run_pk

#: Most runs one page (or one API call) lists.
MAX_PAGE = 500
#: Metric columns the runs table shows at most.
KEY_METRICS = 3


@dataclass(frozen=True)
class RunsPage:
    """One page of runs, newest first, with each run's numeric metrics."""

    runs: list[RunSummary]
    metrics: dict[str, dict[str, float]]
    key_metrics: list[str]
    page: int
    has_next: bool


def runs_page(
    conn: Connection,
    *,
    dna_prefix: str | None = None,
    filters: Sequence[Filter] = (),
    since: datetime | None = None,
    until: datetime | None = None,
    page: int = 1,
    per_page: int = 50,
) -> RunsPage:
    """Runs matching every condition, newest first, page ``page`` (from 1) of ``per_page``."""
    stmt = filtered(
        conn,
        select(*SUMMARY_COLUMNS, Run.id),
        dna_prefix=dna_prefix,
        filters=filters,
        since=since,
    )
    if stmt is None:
        return RunsPage([], {}, [], page, False)
    if until is not None:
        stmt = stmt.where(Run.generated_at < until)
    stmt = stmt.order_by(Run.generated_at.desc(), Run.run_id.desc())
    rows = conn.execute(stmt.limit(per_page + 1).offset((page - 1) * per_page)).all()
    has_next = len(rows) > per_page
    rows = rows[:per_page]
    keys = {row.id: row.run_id for row in rows}
    runs = [RunSummary(**{c.key: row._mapping[c.key] for c in SUMMARY_COLUMNS}) for row in rows]
    metrics: dict[str, dict[str, float]] = defaultdict(dict)
    counts: dict[str, int] = defaultdict(int)
    for part in chunks(sorted(keys)):
        for pk, name, value in conn.execute(
            select(Metric.run_pk, Metric.name, Metric.value).where(Metric.run_pk.in_(part))
        ):
            metrics[keys[pk]][name] = float(value)
            counts[name] += 1
    # The metrics most runs of the page report, then by name: the table's columns.
    key_metrics = sorted(counts, key=lambda n: (-counts[n], n))[:KEY_METRICS]
    return RunsPage(runs, dict(metrics), sorted(key_metrics), page, has_next)


@dataclass(frozen=True)
class Dimension:
    """A fleet column: a ``find`` option and the manifest path it is counted by."""

    option: str
    label: str
    path: str


FLEET = (
    Dimension("gpu", "GPU model", "hardware.gpu_model"),
    Dimension("driver", "Driver", "hardware.driver_version"),
    Dimension("vbios", "VBIOS", "hardware.gpus.vbios_version"),
    Dimension("cuda", "CUDA", "hardware.cuda_version"),
    Dimension("nccl", "NCCL", "hardware.nccl_version"),
)


def fleet(conn: Connection) -> dict[str, list[tuple[str, int]]]:
    """Per :data:`FLEET` option, (value, runs holding it), most runs first.

    Counted from the facts, never by reading runs: a value held through a fact set counts
    the set's runs (one range of ``run_fact_sets`` per set, each set counted once for every
    dimension), a value held as a run's own fact counts its ``facts`` rows.
    """
    paths = {
        path_id: path
        for path_id, path in conn.execute(
            select(FactPath.id, FactPath.path).where(FactPath.path.in_([d.path for d in FLEET]))
        )
    }
    values: dict[int, tuple[str, str]] = {}
    for value_id, path_id, value in conn.execute(
        select(FactValue.id, FactValue.path_id, FactValue.value).where(
            FactValue.path_id.in_(list(paths))
        )
    ):
        values[value_id] = (paths[path_id], value)
    held: dict[int, int] = defaultdict(int)
    members: dict[int, list[int]] = defaultdict(list)
    for part in chunks(sorted(values)):
        for value_id, count in conn.execute(
            select(Fact.value_id, func.count())
            .where(Fact.value_id.in_(part))
            .group_by(Fact.value_id)
        ):
            held[value_id] += int(count)
        for value_id, set_id in conn.execute(
            select(FactSetMember.value_id, FactSetMember.set_id).where(
                FactSetMember.value_id.in_(part)
            )
        ):
            members[set_id].append(value_id)
    for part in chunks(sorted(members)):
        for set_id, count in conn.execute(
            select(RunFactSet.set_id, func.count())
            .where(RunFactSet.set_id.in_(part))
            .group_by(RunFactSet.set_id)
        ):
            for value_id in members[set_id]:
                held[value_id] += int(count)
    by_path: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for value_id, count in held.items():
        if count:
            path, value = values[value_id]
            by_path[path].append((value, count))
    return {
        d.option: sorted(by_path.get(d.path, []), key=lambda vc: (-vc[1], vc[0])) for d in FLEET
    }


def run_pins(conn: Connection, run_id: str) -> list[PinRecord]:
    """The checkpoints pinned to one run, newest first."""
    return pins_mod.select_pins(conn, "pins.run_pk = :run_pk", {"run_pk": run_pk(conn, run_id)})


def checkpoint(conn: Connection, target: str) -> list[PinRecord]:
    """``which`` by ``blake3:<hex>`` or by name, never by a file: a URL names no path."""
    if is_tagged(target):
        return pins_mod.by_digest(conn, parse_digest(target))
    return pins_mod.by_name(conn, target)


TreeRow = tuple[int, str, str, bool, Any]


def tree(value: Any, path: str = "") -> list[TreeRow]:
    """A manifest as rows (depth, key, dotted path, is a branch, leaf), in document order."""
    rows: list[TreeRow] = []

    def walk(node: Any, prefix: str, depth: int) -> None:
        items: list[tuple[str, Any]]
        if isinstance(node, dict):
            items = [(str(k), v) for k, v in node.items()]
        else:
            items = [(f"[{i}]", v) for i, v in enumerate(node)]
        for key, child in items:
            dotted = f"{prefix}.{key}" if prefix else key
            if isinstance(child, (dict, list)) and child:
                rows.append((depth, key, dotted, True, None))
                walk(child, dotted, depth + 1)
            else:
                rows.append((depth, key, dotted, False, child))

    walk(value, path, 0)
    return rows


def metric_values(conn: Connection, run_ids: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
    """Per metric name, ``(run id, value)`` of the given runs (the dots of a strip plot)."""
    found: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for part in chunks(sorted(run_ids)):
        for run_id, name, value in conn.execute(
            select(Run.run_id, Metric.name, Metric.value)
            .join(Metric, Metric.run_pk == Run.id)
            .where(Run.run_id.in_(part))
        ):
            found[name].append((run_id, float(value)))
    return dict(found)


def count_runs(conn: Connection, *, dna: str | None = None, family: str | None = None) -> int:
    """How many runs have this DNA, or this family digest."""
    stmt = select(func.count()).select_from(Run)
    stmt = stmt.where(Run.dna == dna) if dna is not None else stmt.where(Run.family == family)
    return int(conn.execute(stmt).scalar_one())
