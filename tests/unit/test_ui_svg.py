"""The web view's pictures as geometry: a strip plot's scale and a lineage graph's columns."""

from __future__ import annotations

import math
from datetime import datetime

from expdna.store.entities import LineageEdge, LineageReport
from expdna.store.stability import MetricStats, summarise
from expdna.ui.svg import (
    COLUMN,
    STRIP_HEIGHT,
    STRIP_WIDTH,
    Strip,
    lineage_graph,
    strip,
    strips_per_value,
)


def test_a_strip_spans_min_to_max_with_the_mean_and_a_std_box() -> None:
    values = [("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 3.0)]
    stats = summarise([v for _, v in values])
    assert stats is not None
    plot = strip(values, stats)
    xs = [p.x for p in plot.points]
    assert xs[0] == 10 and xs[2] == xs[3] == STRIP_WIDTH - 10
    assert plot.mean_x == round(10 + (2.25 - 1) / 2 * (STRIP_WIDTH - 20), 2)
    assert plot.box is not None and plot.box[0] < plot.mean_x < plot.box[1]
    # Equal values do not hide each other: the second one leaves the line.
    assert plot.points[2].y == STRIP_HEIGHT / 2 != plot.points[3].y
    assert plot.points[0].title == "a: 1"


def test_one_run_has_no_box_and_sits_in_the_middle() -> None:
    stats = summarise([0.5])
    assert stats is not None
    plot = strip([("only", 0.5)], stats)
    assert plot.box is None and plot.points[0].x == plot.mean_x == STRIP_WIDTH / 2


def _edge(direction: str, depth: int, parent: str, child: str, run: str) -> LineageEdge:
    return LineageEdge(
        direction=direction,  # type: ignore[arg-type]
        depth=depth,
        relation="resumed_from",
        parent=parent,
        child=child,
        source="link",
        run_id=run,
        dna="d" * 64 if run != "gone" else None,
        generated_at=datetime(2026, 8, 5),
    )


def test_ancestors_go_left_and_descendants_right_one_column_per_depth() -> None:
    report = LineageReport(
        run_id="mid",
        dna="d" * 64,
        ancestors=[
            _edge("ancestor", 1, "p", "mid", "p"),
            _edge("ancestor", 2, "gone", "p", "gone"),
        ],
        descendants=[
            _edge("descendant", 1, "mid", "c1", "c1"),
            _edge("descendant", 1, "mid", "c2", "c2"),
        ],
    )
    graph = lineage_graph(report)
    x = {n.run_id: n.x for n in graph.nodes}
    assert x["gone"] < x["p"] < x["mid"] < x["c1"] == x["c2"]
    assert x["mid"] - x["p"] == COLUMN
    assert [n.run_id for n in graph.nodes if not n.recorded] == ["gone"]
    assert [n.run_id for n in graph.nodes if n.centre] == ["mid"]
    assert len(graph.edges) == 4 and all(e.x1 < e.x2 for e in graph.edges)


def test_past_a_hundred_runs_a_box_plot_of_quartiles_replaces_the_dots() -> None:
    values = [(f"r{i}", float(i)) for i in range(101)]
    stats = summarise([v for _, v in values])
    assert stats is not None
    plot = strip(values, stats)
    assert plot.points == [] and plot.quartiles is not None
    q = plot.quartiles
    assert q.low == 10 and q.high == STRIP_WIDTH - 10
    assert q.low < q.q1 < q.median == plot.mean_x < q.q3 < q.high


def _coordinates(plot: Strip) -> list[float]:
    found = [plot.mean_x, *(c for p in plot.points for c in (p.x, p.y)), *(plot.box or ())]
    if plot.quartiles is not None:
        q = plot.quartiles
        found += [q.low, q.q1, q.median, q.q3, q.high]
    return found


def test_the_largest_floats_of_both_signs_span_the_strip() -> None:
    # 1e308 - -1e308 overflows to inf, and a scale over it puts every dot at nan
    low, high = 10, STRIP_WIDTH - 10
    plots = strips_per_value([("a", [("r1", 1e308), ("r2", 1e308)]), ("b", [("r3", -1e308)])])
    assert [p.points[0].x for _, p in plots] == [high, low]
    assert plots[0][1].mean_x == high
    # values whose std overflows a float (statistics.stdev raises): drawn, without a box
    [(_, wide)] = strips_per_value([("c", [("r4", 1.7e308), ("r5", -1.7e308)])])
    assert [p.x for p in wide.points] == [high, low] and wide.box is None
    assert wide.mean_x == STRIP_WIDTH / 2


def test_no_coordinate_is_nan_or_infinite() -> None:
    huge = [(f"r{i}", (1.7e308, -1.7e308, 1e308)[i % 3]) for i in range(101)]
    drawn = strips_per_value(
        [
            ("huge", huge),  # more than a hundred: quartiles
            ("inf", [("i1", math.inf), ("i2", -math.inf), ("i3", 1.0), ("i4", math.nan)]),
        ]
    )
    assert [value for value, _ in drawn] == ["huge", "inf"]
    assert [p.title for p in drawn[1][1].points] == ["i3: 1"]  # only finite metrics
    quartiles = drawn[0][1].quartiles
    assert quartiles is not None and quartiles.low == 10 and quartiles.high == STRIP_WIDTH - 10
    # a strip given infinite bounds or values directly still draws inside its width
    stats = MetricStats(3, math.nan, math.inf, -math.inf, math.inf, None)
    direct = strip([("a", -math.inf), ("b", 0.0), ("c", math.nan)], stats)
    for plot in (*(p for _, p in drawn), direct):
        assert all(math.isfinite(c) and 0 <= c <= STRIP_WIDTH for c in _coordinates(plot))
