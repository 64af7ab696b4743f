"""From a fleet (expdna.store.explain) to ranked findings: which fields vary, which vary
together, how each goes with the outcome, corrected for testing many.

A field is tested on the values at least :data:`MIN_RUNS` runs hold; a field with fewer
than two such values is "too few runs to judge", and one whose every value is a single
run's (a seed per run, an output directory) names runs rather than a condition, once it
has at least :data:`MIN_RUNS` of them (two runs on two drivers are too few to judge). Fields
that split the runs identically (a node's VBIOS and its hostname, a driver confounded
with a node) are one finding, tested once: the data cannot tell them apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from expdna.store.explain import Column

#: Fewest runs a value needs to be part of its field's test.
MIN_RUNS = 3
#: Adjusted p-values below this are findings.
ALPHA = 0.05
#: How a finding names its fields first: the machine before the software before the rest.
_PRIORITY = ("hardware.", "runtime.", "environment.", "installed.", "config.", "training.")


@dataclass(frozen=True)
class Outcome:
    """What is explained: a metric's value (``kind`` "numeric") or a bad/good split
    ("binary"), with the words a sentence uses for a bad run (``bad``: "failed")."""

    kind: str
    label: str
    bad: str = "were bad"
    metric: str | None = None


@dataclass(frozen=True)
class ValueStat:
    value: str
    n: int
    #: the median metric (numeric) or the bad rate (binary)
    centre: float
    bad: int | None = None
    #: the same runs' values of the finding's other fields
    aliases: tuple[str, ...] = ()
    #: the value's index in its first field's ``Column.names``: two values may read alike
    #: (a value "A|B", and a run's two GPUs' "A" and "B" joined), their codes differ
    code: int = -1
    #: the runs that lack the field (``value`` reads "(absent)", as a run could hold)
    absent: bool = False

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"value": self.value, "n": self.n, "centre": _json(self.centre)}
        if self.absent:
            found["absent"] = True
        if self.bad is not None:
            found["bad"] = self.bad
        if self.aliases:
            found["aliases"] = list(self.aliases)
        return found


@dataclass(frozen=True)
class Finding:
    fields: tuple[str, ...]
    values: tuple[ValueStat, ...]
    #: median of the most extreme value minus the median of the rest's (numeric)
    difference: float
    effect: float
    extreme: int
    p: float
    q: float
    method: str
    #: runs of values too rare to test, left out of this finding
    left_out: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "fields": list(self.fields),
            "values": [v.to_dict() for v in self.values],
            "difference": _json(self.difference),
            "effect": self.effect,
            "extreme": self.values[self.extreme].value,
            "p": self.p,
            "adjusted_p": self.q,
            "method": self.method,
            "left_out": self.left_out,
        }


@dataclass(frozen=True)
class Explanation:
    outcome: Outcome
    runs: int
    #: runs with an outcome (the others are left out of every test)
    judged: int
    findings: list[Finding]
    too_few: list[str] = field(default_factory=list)
    per_run: list[str] = field(default_factory=list)
    setup: str | None = None
    #: runs with no outcome at all (no such metric, no status section)
    missing: int = 0
    #: bad runs among the judged (a bad/good outcome)
    bad: int | None = None
    #: what the outcome's split did that the answer must say (NaN and infinite metrics)
    notes: tuple[str, ...] = ()

    def nothing_to_explain(self) -> str | None:
        """Why there is no question to answer, or None: no run has the outcome, or a
        bad/good outcome holds every judged run on one side."""
        if self.judged == 0:
            return f"none of the {self.runs} selected runs has {self._what()}"
        if self.bad == 0:
            return f"none of the {self.judged} judged runs {self.outcome.bad}: nothing to explain"
        if self.bad == self.judged:
            return (
                f"all {self.judged} judged runs {self.outcome.bad}: no good run to tell them "
                "apart from"
            )
        return None

    def _what(self) -> str:
        return self.outcome.metric or "a status section"

    @property
    def significant(self) -> list[Finding]:
        return [f for f in self.findings if f.q < ALPHA]

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": {
                "kind": self.outcome.kind,
                "label": self.outcome.label,
                "metric": self.outcome.metric,
            },
            "setup": self.setup,
            "runs": self.runs,
            "judged": self.judged,
            "alpha": ALPHA,
            "findings": [f.to_dict() for f in self.findings],
            "top": sentence(self),
            "too_few_runs": list(self.too_few),
            "per_run_fields": list(self.per_run),
            "limits": limits(self),
        }


def _json(value: float) -> float | None:
    """A number JSON can hold: an infinite or NaN centre or difference (from infinite
    metrics, or a difference past the double range) is null."""
    return value if math.isfinite(value) else None


def _rank(path: str) -> tuple[int, str]:
    for i, prefix in enumerate(_PRIORITY):
        if path.startswith(prefix):
            return i, path
    return len(_PRIORITY), path


def _first_seen(codes: Any, distinct: int) -> tuple[Any, Any, Any]:
    """A column's codes (each below ``distinct``) renumbered by first appearance, so two
    fields that split the runs alike get equal codes; each new code's old code; the runs
    per new code."""
    import numpy as np

    first = np.full(distinct, len(codes), dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)  # the last write is the first run
    old = np.argsort(first)[: int((first < len(codes)).sum())]
    renumber = np.empty(distinct, dtype=np.int64)
    renumber[old] = np.arange(len(old))
    return renumber[codes], old, np.bincount(codes, minlength=distinct)[old]


def explain(
    runs: int,
    outcome: Outcome,
    values: Sequence[float | None],
    fields: Mapping[str, Column | Sequence[str]],
    notes: Sequence[str] = (),
) -> Explanation:
    """Test every field of ``fields`` (path -> a :class:`Column`, or a value per run)
    against ``values`` (the outcome per run, None where a run has none, NaN where it
    cannot be ranked: left out, as ``notes`` say)."""
    import numpy as np

    from expdna.explain import association
    from expdna.store.explain import Column

    kept = np.array(
        [i for i, v in enumerate(values) if v is not None and not math.isnan(v)], dtype=np.int64
    )
    outcome_values = np.array([values[i] for i in kept.tolist()], dtype=float)
    together: dict[bytes, list[str]] = {}
    coded: dict[str, tuple[tuple[str, ...], Any, Any, list[int]]] = {}
    lacking: dict[str, int] = {}  # path -> the new code of its runs without the field
    too_few: list[str] = []
    per_run: list[str] = []
    for path, given in fields.items():
        column = given if isinstance(given, Column) else Column.of(given)
        seen = column.codes[kept] if len(kept) < len(column.codes) else column.codes
        if len(seen) < 2:
            continue
        codes, old, counts = _first_seen(seen, len(column.names))
        if len(counts) < 2:
            continue  # the same for every judged run
        names = tuple(column.names[k] for k in old.tolist())
        if column.absent and (old == len(column.names) - 1).any():
            lacking[path] = int(np.argmax(old == len(column.names) - 1))
        if counts.max() == 1 and len(counts) >= MIN_RUNS:
            per_run.append(path)
        elif int((counts >= MIN_RUNS).sum()) < 2:
            too_few.append(path)
        else:
            coded[path] = (names, codes, counts, old.tolist())
            together.setdefault(codes.tobytes(), []).append(path)
    groups: list[tuple[list[str], list[int], tuple[str, ...], list[tuple[str, ...]]]] = []
    splits = []
    for group in together.values():
        paths = sorted(group, key=_rank)
        names, codes, counts, _ = coded[paths[0]]
        others = [coded[p][0] for p in paths[1:]]  # same codes: value k is their names[k]
        order = sorted(range(len(names)), key=lambda k: (-counts[k], names[k]))
        order = [k for k in order if counts[k] >= MIN_RUNS]
        renumber = np.full(len(names), -1, dtype=np.int64)
        renumber[order] = np.arange(len(order))
        groups.append((paths, order, names, others))
        splits.append(renumber[codes])
    found = association.associations(outcome.kind, outcome_values, splits, ALPHA)
    tested: list[tuple[list[str], list[ValueStat], Any, float, int]] = []
    for (paths, order, names, others), test in zip(groups, found, strict=True):
        _, _, counts, column_codes = coded[paths[0]]
        stats: list[ValueStat] = []
        for position, k in enumerate(order):
            aliases = tuple(other[k] for other in others)
            n = int(counts[k])
            code = column_codes[k]
            absent = lacking.get(paths[0]) == k
            if outcome.kind == "binary":
                bad = test.bad[position]
                stats.append(ValueStat(names[k], n, bad / n, bad, aliases, code, absent))
            else:
                centre = test.centres[position]
                stats.append(ValueStat(names[k], n, centre, None, aliases, code, absent))
        left_out = int(counts.sum()) - sum(s.n for s in stats)
        tested.append((paths, stats, test, stats[test.extreme].centre - test.rest, left_out))
    qs = association.adjusted([t[2].p for t in tested])
    findings = [
        Finding(
            tuple(paths),
            tuple(stats),
            difference,
            found.effect,
            found.extreme,
            found.p,
            q,
            found.method,
            left_out,
        )
        for (paths, stats, found, difference, left_out), q in zip(tested, qs, strict=True)
    ]
    findings.sort(key=lambda f: (f.q, f.p, -abs(f.effect), _rank(f.fields[0])))
    return Explanation(
        outcome,
        runs,
        len(kept),
        findings,
        sorted(too_few),
        sorted(per_run),
        missing=sum(v is None for v in values),
        bad=int(outcome_values.sum()) if outcome.kind == "binary" else None,
        notes=tuple(notes),
    )


def _number(value: float) -> str:
    return f"{value:.4g}"


def sentence(report: Explanation) -> str:
    """The top finding in one sentence, or that there is none."""
    if not report.significant:
        return (
            f"no recorded field goes with {report.outcome.label} below the corrected "
            f"threshold (adjusted p < {ALPHA}) among {len(report.findings)} tested"
        )
    top = report.significant[0]
    first = top.values[top.extreme]
    others = [v for i, v in enumerate(top.values) if i != top.extreme]
    path = top.fields[0]
    if report.outcome.kind == "binary":
        rest = "; ".join(f"with {v.value} in {v.bad} of {v.n}" for v in others)
        return (
            f"runs with {path} {first.value} {report.outcome.bad} in {first.bad} of "
            f"{first.n} runs; {rest}"
        )
    rest = "; ".join(f"with {v.value} {_number(v.centre)} ({v.n} runs)" for v in others)
    return (
        f"runs with {path} {first.value} have a median {report.outcome.label} of "
        f"{_number(first.centre)} ({first.n} runs); {rest}"
    )


def limits(report: Explanation) -> list[str]:
    """What the answer cannot say, printed with it."""
    lines = [
        "association, not cause: a field that goes with the outcome may stand for one that "
        "was not recorded, or that changed with it",
        f"values held by fewer than {MIN_RUNS} runs are left out of their field's test",
    ]
    lines += report.notes
    if report.missing:
        lines.append(f"{report.missing} of {report.runs} runs have no {report._what()}: left out")
    if report.too_few:
        shown = ", ".join(report.too_few[:8]) + (", ..." if len(report.too_few) > 8 else "")
        lines.append(f"too few runs to judge {_fields(len(report.too_few))}: {shown}")
    if report.per_run:
        lines.append(
            f"{_count(len(report.per_run), 'field differs', 'fields differ')} in every run "
            "(they name runs): not tested"
        )
    tails = sum(f.method.endswith("asymptotic tail") for f in report.findings)
    if tails:
        lines.append(
            f"{_count(tails, 'finding is', 'findings are')} beyond every permutation "
            "resample: their p-values are the statistic's asymptotic tail"
        )
    stopped = sum(f.method.startswith("permutation (stopped") for f in report.findings)
    if stopped:
        lines.append(
            f"{_count(stopped, 'field was', 'fields were')} resampled only until the p-value "
            f"was sure to be above {ALPHA} (a sequential permutation test): those p-values are "
            "coarse"
        )
    if report.judged < 2 * MIN_RUNS:
        lines.append(f"only {_count(report.judged, 'run', 'runs')}: no field can be judged")
    return lines


def _count(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _fields(count: int) -> str:
    return _count(count, "varying field", "varying fields")
