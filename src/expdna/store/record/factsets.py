"""Fact sets: the facts of a repeated section, stored once and shared by every run holding it.

A run's facts split in two. The leaves of a DNA section (and of ``command``) that do not
name the run itself form that section's *fact set*: runs on one machine share a hardware
set, runs of one checkout share a code set, repeats of one setup share a config set. A run
then adds one link row per section instead of a row per leaf (~10 rows instead of ~80),
which is most of the index's size and of the cost of recording. The other leaves are the
run's *own* facts, a row each: the ones that name one run (an output directory, a run
name, per-allocation environment, Ray node ids and addresses), and every leaf outside
those sections (metrics, collection notes). A query for a (path, value) matches a run
through either.

Where a leaf goes changes only how it is stored, never what a query answers, so the rules
here may err either way; they reuse the DNA's own per-run rules.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from expdna.digest import hex_of
from expdna.manifest.canonical import make_encoder
from expdna.manifest.dna import is_per_allocation_env, is_per_run_arg, is_volatile_resource
from expdna.manifest.model import DNA_SECTIONS

Pair = tuple[str, str]
FactSet = frozenset[Pair]

#: Top-level keys whose leaves (less the per-run ones) form a shared set.
SET_SECTIONS = frozenset(DNA_SECTIONS) | {"command"}
#: Fields of a Ray node that describe its role and shape; the rest name one allocation.
_NODE_SHAPE = frozenset({"role", "resources", "fingerprint"})


@functools.lru_cache(maxsize=8192)
def is_own(path: str) -> bool:
    """Whether the leaf at ``path`` (a flattened path) is a per-run fact, not a set's."""
    section, _, rest = path.partition(".")
    if section not in SET_SECTIONS:
        return True
    parts = rest.split(".")
    if section == "config" and len(parts) >= 2:
        if parts[0] == "resolved_args":
            return is_per_run_arg(parts[1])
        if parts[0] == "selected_env":
            return is_per_allocation_env(parts[1])
    if section == "runtime" and parts[0] == "nodes" and len(parts) >= 2:
        if parts[1] not in _NODE_SHAPE:
            return True
        return parts[1] == "resources" and len(parts) >= 3 and is_volatile_resource(parts[2])
    return False


#: Per section: which keys of which sub-mapping hold a run's own leaves (is_own's rules
#: for the sections where whole values can be set aside before flattening).
_OWN_KEYS = {
    "config": {"resolved_args": is_per_run_arg, "selected_env": is_per_allocation_env},
}


def strip_own(section: str, value: Any) -> tuple[Any, dict[str, Any]] | None:
    """``value`` without the sub-values whose leaves are all the run's own, and those
    sub-values (as a section of the same shape); None where no rule applies.

    Flattening the two gives :func:`split_section`'s two sets, so the stripped value can
    key a memo of the shared set: runs that differ only in their own leaves share it.
    """
    rules = _OWN_KEYS.get(section)
    if rules is None or type(value) is not dict:
        return None
    stripped = dict(value)
    own: dict[str, Any] = {}
    for field, rule in rules.items():
        mapping = value.get(field)
        if type(mapping) is not dict:
            continue
        mine = {k: v for k, v in mapping.items() if rule(k)}
        if mine:
            stripped[field] = {k: v for k, v in mapping.items() if k not in mine}
            own[field] = mine
    return stripped, own


def split_section(facts: Iterable[Pair]) -> tuple[FactSet, FactSet]:
    """The facts of one top-level section as (its shared set, the run's own facts)."""
    shared: list[Pair] = []
    own: list[Pair] = []
    for pair in facts:
        (own if is_own(pair[0]) else shared).append(pair)
    return frozenset(shared), frozenset(own)


def partition(facts: Iterable[Pair]) -> tuple[tuple[FactSet, ...], FactSet]:
    """A whole document's facts as (one shared set per section, the run's own facts)."""
    by_section: dict[str, list[Pair]] = defaultdict(list)
    for pair in facts:
        by_section[pair[0].partition(".")[0]].append(pair)
    sets: list[FactSet] = []
    own: set[Pair] = set()
    for section in sorted(by_section):
        shared, mine = split_section(by_section[section])
        if shared:
            sets.append(shared)
        own |= mine
    return tuple(sets), frozenset(own)


#: ``json.dumps(value, ensure_ascii=False)``, its encoder built once
_dumps = make_encoder(sort_keys=False, separators=(", ", ": "), allow_nan=True)


@functools.lru_cache(maxsize=8192)
def set_digest(facts: FactSet) -> str:
    """The identity of a fact set: BLAKE3 of its sorted pairs as JSON as
    ``json.dumps(sorted(facts), ensure_ascii=False)`` writes it (the same in every index,
    unlike the value ids its rows hold)."""
    return hex_of(_dumps(sorted(facts)).encode("utf-8"))
