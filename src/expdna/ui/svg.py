"""Geometry for the two small pictures: a strip plot per metric and a lineage graph.

Only numbers and the runs' own ids leave here; the templates write the ``<svg>`` elements,
so every label is escaped like any other value and no markup is built from data.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from expdna.store.entities import LineageEdge, LineageReport
from expdna.store.stability import MetricStats, summarise

STRIP_WIDTH = 360
STRIP_HEIGHT = 36
_PAD = 10
_SPREAD = (0, -6, 6, -12, 12)
#: Most runs drawn one dot each.
MAX_DOTS = 100


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class Quartiles:
    """A box plot's x positions: whiskers at min and max, the box from Q1 to Q3."""

    low: float
    q1: float
    median: float
    q3: float
    high: float


@dataclass(frozen=True)
class Strip:
    """One metric's runs as dots on a line, with the mean and the mean ± std as a box; past
    :data:`MAX_DOTS` runs a box plot of quartiles instead (``points`` empty), so a page on a
    large family stays small."""

    width: int
    height: int
    points: list[Point]
    mean_x: float
    box: tuple[float, float] | None
    low: float
    high: float
    quartiles: Quartiles | None = None


def _position(value: float, low: float, high: float) -> float:
    """Where ``value`` lies from ``low`` (0) to ``high`` (1), always finite.

    Halves first: ``high - low`` of two finite floats can overflow (1e308 - -1e308 is
    inf, and inf/inf a nan coordinate); half of each cannot. A value past either end (an
    infinity) is put at that end, and one that is no number, or a range that is not
    finite, in the middle."""
    span = high / 2 - low / 2
    if not 0 < span < math.inf:
        return 0.5
    where = (value / 2 - low / 2) / span
    if math.isnan(where):
        return 0.5
    return min(max(where, 0.0), 1.0)


def _x(position: float) -> float:
    return round(_PAD + position * (STRIP_WIDTH - 2 * _PAD), 2)


def _scale(value: float, low: float, high: float) -> float:
    return _x(_position(value, low, high))  # all in the middle where low == high


def strip(values: Sequence[tuple[str, float]], stats: MetricStats) -> Strip:
    """The strip plot of ``(run id, value)`` pairs; dots of equal values are spread apart."""
    low, high = stats.min, stats.max
    mean_x = _scale(stats.mean, low, high)
    if len(values) > MAX_DOTS:
        # quartiles of the positions, not of the values: interpolating between values near
        # the largest float overflows, between positions in 0..1 never (and gives the same)
        positions = [_position(v, low, high) for _, v in values]
        q1, median, q3 = statistics.quantiles(positions, n=4)
        ends = _position(low, low, high), _position(high, low, high)
        quartiles = Quartiles(*(_x(p) for p in (ends[0], q1, median, q3, ends[1])))
        return Strip(STRIP_WIDTH, STRIP_HEIGHT, [], mean_x, None, low, high, quartiles)
    seen: dict[float, int] = {}
    points = []
    for run_id, value in values:
        x = _scale(value, low, high)
        k = seen.get(x, 0)
        seen[x] = k + 1
        # Repeats of one x move off the line, alternating above and below it.
        y = STRIP_HEIGHT / 2 + _SPREAD[k % len(_SPREAD)]
        points.append(Point(x, y, f"{run_id}: {value:.6g}"))
    box = None
    if stats.std is not None:
        box = (
            _scale(max(low, stats.mean - stats.std), low, high),
            _scale(min(high, stats.mean + stats.std), low, high),
        )
    return Strip(STRIP_WIDTH, STRIP_HEIGHT, points, mean_x, box, low, high)


def strips_per_value(
    groups: Sequence[tuple[str, Sequence[tuple[str, float]]]],
) -> list[tuple[str, Strip]]:
    """One strip per value of a field (``(value, [(run id, metric), ...])``), all on the
    scale of every run drawn, so the rows compare at a glance. Only finite metrics are
    drawn, as the store keeps only those."""
    finite = [(value, [(r, v) for r, v in pairs if math.isfinite(v)]) for value, pairs in groups]
    every = [v for _, pairs in finite for _, v in pairs]
    if not every:
        return []
    low, high = min(every), max(every)
    drawn = []
    for value, pairs in finite:
        stats = summarise([v for _, v in pairs])
        if stats is None:
            continue
        shared = MetricStats(stats.n, stats.mean, stats.std, low, high, stats.cv)
        drawn.append((value, strip(pairs, shared)))
    return drawn


COLUMN = 250
ROW = 46
NODE_W = 220
NODE_H = 30


@dataclass(frozen=True)
class Node:
    run_id: str
    x: float
    y: float
    recorded: bool
    centre: bool


@dataclass(frozen=True)
class Edge:
    x1: float
    y1: float
    x2: float
    y2: float
    relation: str


@dataclass(frozen=True)
class Graph:
    width: int
    height: int
    nodes: list[Node]
    edges: list[Edge]
    node_w: int = NODE_W
    node_h: int = NODE_H


def lineage_graph(report: LineageReport) -> Graph:
    """Ancestors to the left of the run, one column per depth; descendants to the right."""
    column: dict[str, int] = {report.run_id: 0}
    recorded: dict[str, bool] = {report.run_id: report.dna is not None}
    edges: Sequence[LineageEdge] = (*report.ancestors, *report.descendants)
    for edge in edges:
        step = -edge.depth if edge.direction == "ancestor" else edge.depth
        column.setdefault(edge.run_id, step)
        recorded.setdefault(edge.run_id, edge.dna is not None)
    lowest = min(column.values())
    rows: dict[int, int] = {}
    place: dict[str, tuple[float, float]] = {}
    for run_id in sorted(column, key=lambda r: (column[r], r)):
        c = column[run_id] - lowest
        r = rows.get(c, 0)
        rows[c] = r + 1
        place[run_id] = (_PAD + c * COLUMN, _PAD + r * ROW)
    nodes = [
        Node(run_id, x, y, recorded[run_id], run_id == report.run_id)
        for run_id, (x, y) in place.items()
    ]
    lines = []
    drawn: set[tuple[str, str, str]] = set()
    for edge in edges:
        key = (edge.parent, edge.child, edge.relation)
        if key in drawn or edge.parent not in place or edge.child not in place:
            continue
        drawn.add(key)
        (px, py), (cx, cy) = place[edge.parent], place[edge.child]
        lines.append(
            Edge(px + NODE_W, py + NODE_H / 2, cx, cy + NODE_H / 2, edge.relation)
            if cx > px
            else Edge(px, py + NODE_H / 2, cx + NODE_W, cy + NODE_H / 2, edge.relation)
        )
    width = _PAD * 2 + (max(column.values()) - lowest) * COLUMN + NODE_W
    height = _PAD * 2 + (max(rows.values()) - 1) * ROW + NODE_H
    return Graph(int(width), int(height), nodes, lines)
