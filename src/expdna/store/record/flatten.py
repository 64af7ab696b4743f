"""A manifest as facts: one (dotted path, value) per leaf, list indexes dropped.

``hardware.gpus.vbios_version`` holds the VBIOS of every GPU of a run, so a query for one
VBIOS matches a run on any of its GPUs. Values are compared as text: strings as they are,
numbers and booleans as JSON writes them (``16``, ``0.0003``, ``true``). A value longer than
:data:`MAX_VALUE_CHARS` is kept as ``blake3:<hex>`` of its UTF-8 bytes, and a query value
gets the same treatment, so equality still matches without storing long text twice.

Left out: the fields that are ``runs`` columns (run id, times, schema version, the DNA),
inline patch and config file text (their digests are facts), collector timings (unique per
run and never asked for), and numeric metrics, which go to the ``metrics`` table instead.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from typing import Any

from expdna.digest import ref_of

MAX_VALUE_CHARS = 200

#: Globs of dotted paths that never become facts (the reason is in the module docstring).
NOT_FACTS: tuple[str, ...] = (
    "schema_version",
    "run_id",
    "generated_at",
    "dna",
    "dna.*",
    "code.*.patch.text",
    "config.config_file_details.*.text",
    "collection.duration_ms",
    "collection.collectors.*.duration_ms",
    # status: the state is a ``runs`` column; times and memory are unique per run.
    "status.state",
    "status.started_at",
    "status.ended_at",
    "status.duration_s",
    "status.peak_rss_bytes",
)
_NOT_FACTS = re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in NOT_FACTS))
#: Top-level keys left out whole (``runs`` columns).
_COLUMNS = frozenset(g for g in NOT_FACTS if "." not in g and "*" not in g)
#: Top-level keys that never hold a fact.
COLUMN_KEYS = _COLUMNS
#: Top-level keys under which a NOT_FACTS pattern can match deeper down.
_CHECKED = frozenset(g.split(".")[0] for g in NOT_FACTS if "." in g) - _COLUMNS
_METRICS = "metrics"


def fact_value(value: Any) -> str | None:
    """The text a leaf is stored and compared as; None for ``null``."""
    kind = type(value)
    if kind is str:
        text: str = value
    elif value is None:
        return None
    elif kind is bool:
        text = "true" if value else "false"
    elif kind is int:
        text = str(value)
    elif kind is float:
        text = repr(value) if math.isfinite(value) else _non_finite(value)
    else:
        text = json.dumps(value)
    return text if len(text) <= MAX_VALUE_CHARS else query_value(text)


def _non_finite(value: float) -> str:
    if math.isnan(value):
        return "<non-finite:nan>"
    return "<non-finite:inf>" if value > 0 else "<non-finite:-inf>"


def query_value(text: str) -> str:
    """A value as the index holds it: long text becomes its digest."""
    return ref_of(text.encode("utf-8")) if len(text) > MAX_VALUE_CHARS else text


def _walk(value: Any, path: str, facts: set[tuple[str, str]], check: bool) -> None:
    """Add the leaves under ``value`` to ``facts``.

    Written for speed (a manifest has ~80 leaves and recording does this for every run):
    leaves are handled inline, strings first, and the NOT_FACTS patterns are only tried
    under the top-level keys they can match (``check``).
    """
    if type(value) is dict:
        items: Any = [(f"{path}.{key}", item) for key, item in value.items()]
    elif type(value) is list:
        items = [(path, item) for item in value]
    else:
        items = [(path, value)]
    for sub, item in items:
        kind = type(item)
        if kind is dict or kind is list:
            _walk(item, sub, facts, check)
            continue
        if item is None or (check and _NOT_FACTS.match(sub) is not None):
            continue
        if kind is str and len(item) <= MAX_VALUE_CHARS:
            facts.add((sub, item))
        else:
            text = fact_value(item)
            if text is not None:
                facts.add((sub, text))


def _is_metric(value: Any) -> bool:
    kind = type(value)
    return (kind is int or kind is float) and math.isfinite(value)


def flatten(doc: dict[str, Any]) -> tuple[set[tuple[str, str]], dict[str, float]]:
    """The facts of a store-form document and its numeric metrics (name without ``metrics.``)."""
    facts: set[tuple[str, str]] = set()
    metrics: dict[str, float] = {}
    for key, value in doc.items():
        if key in _COLUMNS:
            continue
        if key != _METRICS or type(value) is not dict:
            _walk(value, str(key), facts, key in _CHECKED)
            continue
        stack = [(f"{_METRICS}.{name}", item) for name, item in value.items()]
        while stack:
            path, item = stack.pop()
            if type(item) is dict:
                stack += [(f"{path}.{name}", sub) for name, sub in item.items()]
            elif _is_metric(item):
                metrics[path[len(_METRICS) + 1 :]] = float(item)
            else:
                _walk(item, path, facts, False)
    return facts, metrics
