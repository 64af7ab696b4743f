"""Interning fact paths and (path, value) pairs: text stored once, integers everywhere else.

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

from expdna.store.bulk import insert_absent
from expdna.store.models import FactPath, FactValue

#: Rows per IN list (under SQLite's parameter limit) and per executemany.
CHUNK = 500
#: Cached (path, value) ids kept at most; past it the cache starts again.
MAX_CACHED_VALUES = 200_000

Pair = tuple[str, str]


@dataclass
class InternCache:
    paths: dict[str, int] = field(default_factory=dict)
    values: dict[Pair, int] = field(default_factory=dict)

    def add(self, interned: Interned) -> None:
        """Take the ids of a transaction that committed."""
        self.paths.update(interned.new_paths)
        if len(self.values) + len(interned.new_values) > MAX_CACHED_VALUES:
            self.values.clear()
        self.values.update(interned.new_values)


@dataclass
class Interned:
    """Ids for one batch: every pair it needs, and the ones the cache lacked."""

    values: dict[Pair, int]
    new_paths: dict[str, int]
    new_values: dict[Pair, int]


def _chunks(items: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(items), CHUNK):
        yield items[start:start + CHUNK]


def _insert_ignore_sql(conn: Connection, table: str, columns: tuple[str, ...]) -> str:
    # ON CONFLICT DO NOTHING is the same words in SQLite (>= 3.24) and PostgreSQL.
    quote = conn.dialect.identifier_preparer.quote
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    return (
        f"INSERT INTO {quote(table)} ({', '.join(quote(c) for c in columns)}) "
        f"VALUES ({', '.join(mark for _ in columns)}) ON CONFLICT DO NOTHING"
    )


def _path_ids(conn: Connection, paths: set[str], cache: InternCache) -> dict[str, int]:
    known = {path: cache.paths[path] for path in paths if path in cache.paths}
    missing = sorted(paths - known.keys())
    if missing:
        conn.exec_driver_sql(
            _insert_ignore_sql(conn, FactPath.__tablename__, ("path",)), [(p,) for p in missing]
        )
        for part in _chunks(missing):
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
    if conn.dialect.name == "postgresql":  # arrays: see expdna.store.bulk
        insert_absent(conn, FactValue, [{"path_id": paths[path], "value": value}
                                        for path, value in missing], ("path_id", "value"))
    else:
        conn.exec_driver_sql(
            _insert_ignore_sql(conn, FactValue.__tablename__, ("path_id", "value")),
            [(paths[path], value) for path, value in missing],
        )
    by_path: dict[str, list[str]] = defaultdict(list)
    for path, value in missing:
        by_path[path].append(value)
    new_values: dict[Pair, int] = {}
    for path, texts in by_path.items():
        # path_id = ? AND value IN (...): a range on the unique index, per path
        for part in _chunks(texts):
            rows = conn.execute(
                select(FactValue.value, FactValue.id)
                .where(FactValue.path_id == paths[path], FactValue.value.in_(part))
            )
            new_values.update({(path, value): value_id for value, value_id in rows})
    values.update(new_values)
    new_paths = {path: pid for path, pid in paths.items() if path not in cache.paths}
    return Interned(values, new_paths, new_values)
