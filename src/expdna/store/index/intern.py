"""Interning fact paths, (path, value) pairs and fact sets: text stored once, integers
everywhere else.

Most values repeat across runs (a driver version, a package version, a GPU model), so the
ids recording needs are almost always in a process-local cache; the cache takes only ids
from committed transactions and is cleared when it grows past a bound (values that only one
run holds would otherwise fill it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import Connection, select

from expdna.store.index.bulk import bulk_insert, chunks, insert_absent
from expdna.store.index.models import FactPath, FactSet, FactSetMember, FactValue
from expdna.store.record.factsets import FactSet as Facts
from expdna.store.record.factsets import set_digest

#: Cached (path, value) ids kept at most; past it the cache starts again.
MAX_CACHED_VALUES = 200_000
#: Cached fact set ids kept at most (a set unique to one run is rare: see factsets).
MAX_CACHED_SETS = 50_000

Pair = tuple[str, str]


@dataclass
class InternCache:
    paths: dict[str, int] = field(default_factory=dict)
    values: dict[Pair, int] = field(default_factory=dict)
    #: fact set digest -> id
    sets: dict[str, int] = field(default_factory=dict)

    def add(self, interned: Interned) -> None:
        """Take the ids of a transaction that committed."""
        self.paths.update(interned.new_paths)
        if len(self.values) + len(interned.new_values) > MAX_CACHED_VALUES:
            self.values.clear()
        self.values.update(interned.new_values)
        if len(self.sets) + len(interned.new_sets) > MAX_CACHED_SETS:
            self.sets.clear()
        self.sets.update(interned.new_sets)


@dataclass
class Interned:
    """Ids for one batch: every pair it needs, and the pairs and sets the cache lacked."""

    values: dict[Pair, int]
    new_paths: dict[str, int]
    new_values: dict[Pair, int]
    new_sets: dict[str, int] = field(default_factory=dict)


def _path_ids(conn: Connection, paths: set[str], cache: InternCache) -> dict[str, int]:
    known = {path: cache.paths[path] for path in paths if path in cache.paths}
    missing = sorted(paths - known.keys())
    if missing:
        insert_absent(conn, FactPath, [{"path": path} for path in missing], ("path",))
        for part in chunks(missing):
            rows = conn.execute(select(FactPath.path, FactPath.id).where(FactPath.path.in_(part)))
            known.update({path: path_id for path, path_id in rows})
    return known


def intern_pairs(conn: Connection, pairs: set[Pair], cache: InternCache) -> Interned:
    """Ids for every (path, value) in ``pairs``, inserting the new ones.

    New pairs are inserted sorted, so concurrent PostgreSQL writers lock in one order.
    """
    values = {pair: cache.values[pair] for pair in pairs if pair in cache.values}
    missing = sorted(pairs - values.keys())
    if not missing:
        return Interned(values, {}, {})
    paths = _path_ids(conn, {path for path, _ in missing}, cache)
    insert_absent(
        conn,
        FactValue,
        [{"path_id": paths[path], "value": value} for path, value in missing],
        ("path_id", "value"),
    )
    by_path: dict[str, list[str]] = defaultdict(list)
    for path, value in missing:
        by_path[path].append(value)
    new_values: dict[Pair, int] = {}
    for path, texts in by_path.items():
        # path_id = ? AND value IN (...): a range on the unique index, per path
        for part in chunks(texts):
            rows = conn.execute(
                select(FactValue.value, FactValue.id).where(
                    FactValue.path_id == paths[path], FactValue.value.in_(part)
                )
            )
            new_values.update({(path, value): value_id for value, value_id in rows})
    values.update(new_values)
    new_paths = {path: pid for path, pid in paths.items() if path not in cache.paths}
    return Interned(values, new_paths, new_values)


def _set_ids(conn: Connection, digests: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for part in chunks(digests):
        rows = conn.execute(select(FactSet.digest, FactSet.id).where(FactSet.digest.in_(part)))
        found.update({digest: set_id for digest, set_id in rows})
    return found


def intern_sets(
    conn: Connection, sets: Iterable[Facts], own: Iterable[Pair], cache: InternCache
) -> tuple[dict[Facts, int], Interned]:
    """Ids for every fact set in ``sets``, inserting the new ones with their members, and
    the value ids of the pairs ``own`` (a batch's facts outside its sets): the pairs of sets
    known already (in the cache or the index) are not looked up, their members being there.
    The new ids go to the returned :class:`Interned` (its ``new_sets`` too) for the cache.

    A set another writer inserts concurrently is written whole by that writer's
    transaction (set row and members together), so a set row is never seen without them.
    """
    by_digest = {set_digest(facts): facts for facts in sets}
    ids = {d: cache.sets[d] for d in by_digest if d in cache.sets}
    missing = sorted(by_digest.keys() - ids.keys())
    found = _set_ids(conn, missing) if missing else {}
    absent = [d for d in missing if d not in found]
    interned = intern_pairs(conn, set(own).union(*(by_digest[d] for d in absent)), cache)
    if absent:
        inserted = dict(
            insert_absent(
                conn, FactSet, [{"digest": d} for d in absent], ("digest",), ("digest", "id")
            )
        )
        members = sorted(
            (interned.values[pair], set_id)
            for digest, set_id in inserted.items()
            for pair in by_digest[digest]
        )
        bulk_insert(conn, FactSetMember, ("value_id", "set_id"), members)
        racing = [d for d in absent if d not in inserted]  # PostgreSQL: committed meanwhile
        found.update(_set_ids(conn, racing) if racing else {})
        found.update(inserted)
    ids.update(found)
    interned.new_sets.update(found)
    return {facts: ids[digest] for digest, facts in by_digest.items()}, interned
