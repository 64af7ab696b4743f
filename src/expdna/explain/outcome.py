"""The outcome ``expdna explain`` is asked to explain, from its options: a metric, a metric
split into bad and good (``--bad 'NAME>X'``, ``--worst N%``), or a run state (``--status``).

Pure parsing and the split; no SciPy, so a bad option is refused before it is imported.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from expdna.errors import InvalidInputError
from expdna.explain.report import Outcome

_BAD = re.compile(r"^\s*([^<>=\s]+)\s*(>=|<=|>|<)\s*(\S+)\s*$")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_PERCENT = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*%?\s*$")
#: States a manifest's ``status.state`` may hold (the ``status`` section).
STATES = ("running", "completed", "failed", "interrupted")


@dataclass(frozen=True)
class Split:
    """The outcome per run (the metric, or 1.0 bad / 0.0 good; None where a run has none,
    NaN where its metric is NaN and no split says what that is), and what the split did
    that the answer must say."""

    values: list[float | None]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Asked:
    """The outcome asked for: ``metric`` read from the index, ``state`` from the facts, and
    how to turn the metric into bad/good (``threshold`` or ``worst``)."""

    outcome: Outcome
    metric: str | None = None
    state: str | None = None
    op: str | None = None
    threshold: float | None = None
    worst: float | None = None

    def split(self, values: Sequence[float | None]) -> Split:
        """The outcome per run: the metric, or 1.0 for a bad run and 0.0 for a good one.

        A metric that is NaN (a run that diverged: the hook records it as
        ``<non-finite:nan>``) is bad in a split, above every value for ``--worst``; an
        infinite one compares as the number it is. The metric alone cannot rank NaN: those
        runs are left out, and the notes say so."""
        undefined = sum(1 for v in values if v is not None and math.isnan(v))
        infinite = sum(1 for v in values if v is not None and math.isinf(v))
        notes: list[str] = []
        if infinite:
            notes.append(
                f"{_runs(infinite)} an infinite {self.metric}: compared as a number beyond "
                "every finite one"
            )
        if self.op is not None and self.threshold is not None:
            if undefined:
                notes.append(f"{_runs(undefined)} {self.metric} NaN: counted as bad")
            split = [None if v is None else float(_bad(v, self.op, self.threshold)) for v in values]
            return Split(split, tuple(notes))
        if self.worst is not None:
            return self._worst(values, self.worst, notes, undefined)
        if undefined:
            notes.append(
                f"{_runs(undefined)} {self.metric} NaN: left out (--bad or --worst count "
                "them as bad)"
            )
        return Split(list(values), tuple(notes))

    def _worst(
        self, values: Sequence[float | None], share: float, notes: list[str], undefined: int
    ) -> Split:
        """The highest ``share`` percent bad (at least one run), NaN above them all; runs
        tied with the last one taken are bad too, and a note says how many that is."""
        known = sorted(_order(v) for v in values if v is not None)
        if not known:
            return Split(list(values), tuple(notes))
        count = max(1, math.ceil(len(known) * share / 100))
        cut = known[-count]
        split = [None if v is None else float(_order(v) >= cut) for v in values]
        bad = int(sum(v for v in split if v is not None))
        at = "NaN" if cut[0] else f"{cut[1]:.4g}"
        notes.append(f"{self.outcome.label}: {bad} of {len(known)} runs, at or above {at}")
        if bad != count:
            notes.append(f"runs tied at the cut: {share:g}% of {len(known)} is {count}, not {bad}")
        if undefined:
            notes.append(f"{_runs(undefined)} {self.metric} NaN: counted among the highest")
        return Split(split, tuple(notes))


def _order(value: float) -> tuple[bool, float]:
    """A metric's place for ``--worst``: NaN above every number."""
    return (True, 0.0) if math.isnan(value) else (False, value)


def _runs(count: int) -> str:
    return f"{count} run has" if count == 1 else f"{count} runs have"


def _bad(value: float, op: str, threshold: float) -> bool:
    return math.isnan(value) or _compare(value, op, threshold)


def _compare(value: float, op: str, threshold: float) -> bool:
    return {
        ">": value > threshold,
        "<": value < threshold,
        ">=": value >= threshold,
        "<=": value <= threshold,
    }[op]


def asked(metric: str | None, bad: str | None, worst: str | None, status: str | None) -> Asked:
    """The outcome from ``--metric``, ``--bad``, ``--worst`` and ``--status``; exit 2 for a
    combination that says nothing or two things."""
    if metric is not None and (not metric.strip() or metric != metric.strip()):
        raise InvalidInputError(f"--metric {metric!r}: expected a metric's name, e.g. final_loss")
    if sum(x is not None for x in (bad, worst, status)) > 1:
        raise InvalidInputError("give only one of --bad, --worst or --status")
    if status is not None:
        if status not in STATES:
            raise InvalidInputError(f"--status {status!r}: expected one of {', '.join(STATES)}")
        if metric is not None:
            raise InvalidInputError("--status explains a run state: give it without --metric")
        return Asked(Outcome("binary", f"status.state={status}", status), state=status)
    if bad is not None:
        found = _BAD.fullmatch(bad)
        number = _finite(found.group(3)) if found else None
        if found is None or number is None:
            raise InvalidInputError(
                f"--bad {bad!r}: expected NAME>X (or <, >=, <=), e.g. 'loss>2.5'"
            )
        name, op = found.group(1), found.group(2)
        if metric is not None and metric != name:
            raise InvalidInputError(f"--bad {bad!r} names {name}, not --metric {metric}")
        label = f"{name}{op}{found.group(3)}"
        return Asked(Outcome("binary", label, f"had {label}", name), name, op=op, threshold=number)
    if metric is None:
        raise InvalidInputError("give --metric NAME (or --status failed)")
    if worst is not None:
        found = _PERCENT.fullmatch(worst)
        share = float(found.group(1)) if found else -1.0
        if not 0 < share < 100:
            raise InvalidInputError(f"--worst {worst!r}: expected a percentage, e.g. 10%")
        label = f"the highest {share:g}% of {metric}"
        return Asked(Outcome("binary", label, f"were in {label}", metric), metric, worst=share)
    return Asked(Outcome("numeric", metric, metric=metric), metric)


def _finite(text: str) -> float | None:
    """A finite decimal number written in ASCII (``float`` would also take ``1_0``, other
    scripts' digits, ``inf`` and ``nan``)."""
    if _NUMBER.fullmatch(text) is None:
        return None
    number = float(text)
    return number if math.isfinite(number) else None
