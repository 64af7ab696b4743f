"""What a check rule says about one field: the shared vocabulary of every rule module."""

from __future__ import annotations

from typing import Literal, NamedTuple

Status = Literal["PASS", "WARN", "FAIL"]
STATUSES: tuple[Status, ...] = ("FAIL", "WARN", "PASS")

#: Markers for facts that are not values: the thing is known to be missing, or clean.
ABSENT = "(absent)"


class Finding(NamedTuple):
    """What a rule says about one field."""

    field: str
    status: Status
    recorded: str | None
    current: str | None
    #: Why, in words, where the two values alone do not say it.
    note: str | None = None
