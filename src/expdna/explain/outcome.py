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
_PERCENT = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*%?\s*$")
#: States a manifest's ``status.state`` may hold (the ``status`` section).
STATES = ("running", "completed", "failed", "interrupted")


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

    def split(self, values: Sequence[float | None]) -> list[float | None]:
        """The outcome per run: the metric, or 1.0 for a bad run and 0.0 for a good one."""
        if self.op is not None and self.threshold is not None:
            return [
                None if v is None else float(_compare(v, self.op, self.threshold)) for v in values
            ]
        if self.worst is not None:
            known = sorted(v for v in values if v is not None)
            if not known:
                return list(values)
            # The highest ``worst`` percent are bad (at least one run).
            count = max(1, math.ceil(len(known) * self.worst / 100))
            cut = known[-count]
            return [None if v is None else float(v >= cut) for v in values]
        return list(values)


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
    if sum(x is not None for x in (bad, worst, status)) > 1:
        raise InvalidInputError("give one of --bad, --worst or --status")
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
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None
