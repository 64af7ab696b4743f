"""Query parameters, checked at the boundary with the CLI's own parsers and messages."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from starlette.datastructures import QueryParams

from expdna.errors import InvalidInputError
from expdna.manifest.times import parse_time
from expdna.store.queries import NAMED_FILTERS, Filter, check_prefix, named_filter, parse_where
from expdna.ui.reads import MAX_PAGE

_WHOLE = re.compile(r"[0-9]{1,10}")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


Params = QueryParams


def text(params: Params, name: str, *, form: bool = True) -> str | None:
    """The parameter's value, ``None`` when absent; ``form``: also when empty (a form's
    unfilled field). The API is not a form: there an empty value is a value, and checked."""
    value = params.get(name)
    return value if value or (value is not None and not form) else None


def whole(
    params: Params,
    name: str,
    default: int,
    *,
    low: int = 1,
    high: int = MAX_PAGE,
    form: bool = True,
) -> int:
    value = text(params, name, form=form)
    if value is None:
        return default
    if _WHOLE.fullmatch(value) is None or not low <= int(value) <= high:
        raise InvalidInputError(f"--{name} {value!r}: expected a whole number from {low} to {high}")
    return int(value)


def flag(params: Params, name: str) -> bool:
    value = (params.get(name) or "").lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise InvalidInputError(f"--{name.replace('_', '-')} {value!r}: expected true or false")


def values(params: Params, name: str, *, form: bool = True) -> list[str]:
    return [v for v in params.getlist(name) if v or not form]


@dataclass(frozen=True)
class RunsQuery:
    """What ``/`` and ``/api/runs`` filter by, as ``expdna runs`` options."""

    dna_prefix: str | None
    where: list[str]
    filters: list[Filter]
    since: datetime | None
    until: datetime | None
    since_text: str | None
    until_text: str | None
    page: int
    limit: int

    def link(self, page: int) -> list[tuple[str, str]]:
        """The query string of another page of the same answer."""
        pairs = [("where", w) for w in self.where]
        pairs += [
            (name, value)
            for name, value in (
                ("dna", self.dna_prefix),
                ("since", self.since_text),
                ("until", self.until_text),
            )
            if value
        ]
        if self.limit != 50:
            pairs.append(("limit", str(self.limit)))
        return [*pairs, ("page", str(page))]


def runs_query(params: Params, *, form: bool = True, most: int = MAX_PAGE) -> RunsQuery:
    """``most``: the largest page asked for (a page of HTML stays under 200 KB at 200 runs)."""
    where = values(params, "where", form=form)
    prefix = text(params, "dna", form=form)
    since_text, until_text = text(params, "since", form=form), text(params, "until", form=form)
    return RunsQuery(
        dna_prefix=check_prefix(prefix) if prefix is not None else None,
        where=where,
        filters=[parse_where(w) for w in where],
        since=parse_time(since_text, "--since") if since_text is not None else None,
        until=parse_time(until_text, "--until") if until_text is not None else None,
        since_text=since_text,
        until_text=until_text,
        page=whole(params, "page", 1, high=10**9, form=form),
        limit=whole(params, "limit", 50, high=most, form=form),
    )


def find_filters(params: Params, *, form: bool = True) -> tuple[list[Filter], dict[str, list[str]]]:
    """``expdna find``'s filters from ``vbios``, ``driver``, ... and ``where``; and the
    values given, by option (for the page's form and links)."""
    given = {name: values(params, name, form=form) for name in NAMED_FILTERS}
    given["where"] = values(params, "where", form=form)
    filters = [named_filter(name, v) for name in NAMED_FILTERS for v in given[name]]
    filters += [parse_where(w) for w in given["where"]]
    return filters, given


def any_given(given: Mapping[str, Sequence[str]]) -> bool:
    return any(given.values())
