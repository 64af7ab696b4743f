"""The runs ``expdna explain`` reads: one setup's runs (or those matching ``--where``), their
outcome, and every field that varies among them, read from the index in bulk.

A run's facts are the members of the fact sets it links to plus its own facts
(:mod:`expdna.store.record.factsets`). A set every selected run links to holds only
fields that are the same for all of them, so it is skipped unread; the members of the
others come back as one aggregated row per set (``group_concat`` / ``string_agg``), so a
fleet of 10,000 runs with 300 varying fields is a few dozen statements and a few
thousand rows, not a query per run. The run-side indexes of revision 392ae1483611 make
each of them a covering range scan.

Each field becomes a :class:`Column`: its distinct values and, per run, an index into
them; a run that lacks the field holds :data:`ABSENT`. A leaf held several times with
different values (two GPUs with two VBIOSes) is their sorted values joined by ``|``.
Package versions come from the listing an ``environment.packages_digest`` names, read
once per distinct listing. The statistics are in :mod:`expdna.explain`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from expdna.errors import InvalidInputError
from expdna.store.index.chunks import chunks
from expdna.store.queries import Filter, conditions

if TYPE_CHECKING:
    from expdna.store.facade import Store
    from expdna.store.index.read import Reader

log = logging.getLogger(__name__)

#: The value of a field a run does not record.
ABSENT = "(absent)"
#: Field paths never explained: the outcome itself, and collection notes about the run.
_SKIPPED_PREFIXES = ("status.", "collection.", "tracking.", "lineage.", "metrics.")
INSTALLED = "installed."
#: The fact naming a run's package listing (``name==version`` lines).
PACKAGES_DIGEST = "environment.packages_digest"
#: Members of at most this many sets (or own facts of this many runs) per statement.
_PER_STATEMENT = 500

Codes = NDArray[np.int64]
#: (run position, value id) per fact; a position is 32 bits (a fleet is far fewer runs)
Cells = tuple[NDArray[np.int32], Codes]


@dataclass(frozen=True)
class Column:
    """One field over the fleet's runs: ``names`` (its distinct values) and ``codes`` (per
    run, the index of its value in ``names``)."""

    names: tuple[str, ...]
    codes: Codes
    #: whether the last of ``names`` stands for the runs that lack the field (it reads
    #: :data:`ABSENT`, which a run could also hold as a value)
    absent: bool = False

    @classmethod
    def of(cls, values: Sequence[str]) -> Column:
        """A column from one value per run."""
        index: dict[str, int] = {}
        codes = np.fromiter(
            (index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values)
        )
        return cls(tuple(index), codes)

    def values(self) -> list[str]:
        """One value per run."""
        return [self.names[c] for c in self.codes.tolist()]


@dataclass(frozen=True)
class Fleet:
    """The selected runs (in index order), their outcome and the fields that may vary.

    ``outcome``: per run, the metric's value, or 1.0 / 0.0 for a state outcome; None where
    a run has none (left out of every test). ``fields``: path -> :class:`Column`; a field
    every run holds alike through one shared fact set is not read, so not here.
    """

    runs: list[str]
    outcome: list[float | None]
    fields: dict[str, Column] = field(default_factory=dict)
    #: The setup digest selected (``--same-setup``), else None.
    setup: str | None = None


def _packages(listing: bytes) -> dict[str, str]:
    """``name==version`` lines -> {name: version}."""
    found: dict[str, str] = {}
    for line in listing.decode("utf-8", "replace").splitlines():
        name, sep, version = line.partition("==")
        if sep and name.strip():
            found[name.strip()] = version.strip()
    return found


def setup_runs(store: Store, ref: str) -> str:
    """The setup digest of the run ``ref`` names (filled in by ``expdna db upgrade`` for a
    run recorded before setup digests; computed from its manifest meanwhile), or, where no
    run answers to ``ref``, the one setup digest it begins (as ``explain`` prints it)."""
    from expdna.store.errors import RunNotFoundError

    try:
        record = store.get(ref)
    except RunNotFoundError:
        found = _setup_of_prefix(store, ref)
        if found is None:
            raise
        return found
    with store.reads.read() as reader:
        found = reader.scalar(
            "SELECT setup FROM runs WHERE run_id = :run_id", {"run_id": record.run_id}
        )
    if found is not None:
        return str(found)
    from expdna.manifest.family import setup_of

    return setup_of(store.show(record.run_id), version=record.dna_version)


def _setup_of_prefix(store: Store, prefix: str) -> str | None:
    """The setup digest ``prefix`` (6 to 64 lowercase hex) begins, if exactly one does."""
    text = prefix.lower()
    if not 6 <= len(text) <= 64 or text.strip("0123456789abcdef"):
        return None
    with store.reads.read() as reader:
        found = [
            str(row[0])
            for row in reader.rows(
                "SELECT DISTINCT setup FROM runs WHERE setup >= :low AND setup < :high LIMIT 2",
                {"low": text, "high": text + "g"},
            )
        ]
    if len(found) > 1:
        raise InvalidInputError(f"setup prefix {prefix} is ambiguous: give more of it")
    return found[0] if found else None


def unset_setups(store: Store) -> int:
    """Runs whose setup digest the index lacks (recorded before it; ``db upgrade`` fills
    it): ``--same-setup`` cannot select them."""
    with store.reads.read() as reader:
        return int(reader.scalar("SELECT count(*) FROM runs WHERE setup IS NULL", {}) or 0)


def _aggregated(dialect: str, column: str) -> str:
    """SQL for ``column``'s values of a group as one comma-separated text."""
    if dialect == "postgresql":
        return f"string_agg(CAST({column} AS TEXT), ',')"
    return f"group_concat({column})"


def _lists(rows: Iterable[Any]) -> tuple[Codes, Codes, Codes]:
    """(key, "id,id,...") rows -> keys, each key's count, and every id in key order."""
    keys: list[int] = []
    texts: list[str] = []
    for key, text in rows:
        keys.append(int(key))
        texts.append(text)
    # one parse of every row's text: a few million ids, no copy of their parts
    flat = (
        np.fromstring(",".join(texts), dtype=np.int64, sep=",") if texts else np.zeros(0, np.int64)
    )
    counts = np.array([t.count(",") + 1 for t in texts], dtype=np.int64)
    return np.array(keys, dtype=np.int64), counts, flat


def _grouped(
    reader: Reader, dialect: str, table: str, key: str, keys: Sequence[int]
) -> tuple[Codes, Codes, Codes]:
    """Per key of ``keys``: the ``value_id`` of ``table`` rows, one aggregated row a key."""
    sql = (
        f"SELECT {key}, {_aggregated(dialect, 'value_id')} FROM {table} "
        f"WHERE {key} IN :keys GROUP BY {key}"
    )
    return _lists(
        row for batch in chunks(keys, _PER_STATEMENT) for row in reader.rows(sql, {"keys": batch})
    )


def read_fleet(
    store: Store,
    *,
    setup: str | None = None,
    filters: Sequence[Filter] = (),
    metric: str | None = None,
    state: str | None = None,
) -> Fleet:
    """The runs of ``setup`` matching ``filters``, with the outcome: ``metric``'s value, or
    whether ``status.state`` is ``state``."""
    if setup is None and not filters:
        raise InvalidInputError("give the runs to explain: --same-setup RUN or --where PATH=VALUE")
    dialect = store.reads.dialect
    with store.reads.read() as reader:
        where = conditions(reader, filters=filters)
        if where is None:
            return Fleet([], [], {}, setup)
        sql, params = where.sql, dict(where.params)
        if setup is not None:
            sql, params["setup"] = f"({sql}) AND runs.setup = :setup", setup
        rows = reader.rows(
            f"SELECT runs.id, runs.run_id, runs.state FROM runs WHERE {sql} ORDER BY runs.id",
            params,
        )
        chosen = f"SELECT runs.id FROM runs WHERE {sql}"
        values: dict[int, float] = {}
        if metric is not None:
            values = {
                int(pk): float(value)
                for pk, value in reader.rows(
                    "SELECT run_pk, value FROM metrics "
                    f"WHERE name = :explained_metric AND run_pk IN ({chosen})",
                    {**params, "explained_metric": metric},
                )
            }
        pks = np.array([int(pk) for pk, _, _ in rows], dtype=np.int64)
        run_keys, set_counts, set_ids = _lists(
            reader.rows(
                f"SELECT run_pk, {_aggregated(dialect, 'set_id')} FROM run_fact_sets "
                f"WHERE run_pk IN ({chosen}) GROUP BY run_pk",
                params,
            )
        )
        links = np.stack([np.repeat(run_keys, set_counts), set_ids], axis=1)
        cells = _cells(reader, dialect, pks, links)
        ids = np.flatnonzero(np.bincount(cells[1])) if len(cells[1]) else cells[1]
        texts = _texts(reader, ids)
    runs = [str(run_id) for _, run_id, _ in rows]
    outcome: list[float | None]
    if state is not None:
        outcome = [None if s is None else float(s == state) for _, _, s in rows]
    else:
        outcome = [values.get(int(pk)) for pk, _, _ in rows]
        if metric is not None:
            for position, number in _non_finite(cells, ids, texts, f"metrics.{metric}").items():
                outcome[position] = number
    fields = _columns(len(rows), cells, texts, ids)
    if PACKAGES_DIGEST in fields:
        fields.update(_installed(store, fields[PACKAGES_DIGEST]))
    log.debug("explain: %d runs, %d fields read", len(runs), len(fields))
    return Fleet(runs, outcome, dict(sorted(fields.items())), setup)


#: How a manifest writes a non-finite metric (canonical JSON has no NaN): the index holds it
#: as a fact, not in ``metrics``.
_NON_FINITE = {"<non-finite:nan>": math.nan, "<non-finite:inf>": math.inf}
_NON_FINITE["<non-finite:-inf>"] = -math.inf


def _non_finite(
    cells: Cells, ids: Codes, texts: tuple[list[str], list[str]], path: str
) -> dict[int, float]:
    """Run position -> the metric at ``path`` where it is NaN or infinite."""
    marked = {
        int(i): _NON_FINITE[value]
        for i, leaf, value in zip(ids.tolist(), *texts, strict=True)
        if leaf == path and value in _NON_FINITE
    }
    if not marked:
        return {}
    runs, value_ids = cells
    hit = np.isin(value_ids, np.array(list(marked), dtype=np.int64))
    return {
        int(run): marked[int(value)]
        for run, value in zip(runs[hit].tolist(), value_ids[hit].tolist(), strict=True)
    }


def _expand(positions: Codes, links: Codes, keys: Codes, counts: Codes, flat: Codes) -> Cells:
    """For each link (the run at ``positions[i]`` holds key ``links[i]``), every id the key
    holds (``counts[k]`` ids of ``flat`` for ``keys[k]``, in order): (run position, id) per
    cell. A link to a key with no ids (an empty set) adds none."""
    if not len(keys):
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64)
    starts = np.cumsum(counts) - counts
    order = np.argsort(keys)
    where = np.minimum(np.searchsorted(keys[order], links), len(keys) - 1)
    found = keys[order][where] == links
    where = order[where[found]]
    lengths = counts[where]
    # cell j of link i is flat[starts[key of i] + j]: the link's first cell's index, less
    # where its cells begin among all, plus the cell's own number among all
    index = np.repeat(starts[where] - (np.cumsum(lengths) - lengths), lengths)
    index += np.arange(len(index), dtype=np.int64)
    return np.repeat(positions[found].astype(np.int32), lengths), flat[index]


def _cells(reader: Reader, dialect: str, pks: Codes, links: Codes) -> Cells:
    """(run position, value id) of every fact the runs hold, less the members of the sets
    every run links to (the same for all of them)."""
    count = len(pks)
    sets, holders = np.unique(links[:, 1], return_counts=True)
    shared = holders[np.searchsorted(sets, links[:, 1])] == count
    varying = links[~shared]
    keys, counts, flat = _grouped(
        reader, dialect, "fact_set_members", "set_id", sets[holders < count].tolist()
    )
    set_runs, set_values = _expand(
        np.searchsorted(pks, varying[:, 0]), varying[:, 1], keys, counts, flat
    )
    keys, counts, flat = _grouped(reader, dialect, "facts", "run_pk", pks.tolist())
    own_runs = np.repeat(np.searchsorted(pks, keys).astype(np.int32), counts)
    return np.concatenate([set_runs, own_runs]), np.concatenate([set_values, flat])


def _texts(reader: Reader, ids: Codes) -> tuple[list[str], list[str]]:
    """The path and the value text of each id of ``ids`` (sorted), as two lists."""
    sql = (
        "SELECT fact_values.id, fact_paths.path, fact_values.value FROM fact_values "
        "JOIN fact_paths ON fact_paths.id = fact_values.path_id WHERE fact_values.id IN :ids"
    )
    found: dict[int, tuple[str, str]] = {}
    for batch in chunks(ids.tolist(), _PER_STATEMENT):
        found.update((int(i), (str(p), str(v))) for i, p, v in reader.rows(sql, {"ids": batch}))
    pairs = [found[i] for i in ids.tolist()]
    return [p for p, _ in pairs], [v for _, v in pairs]


def _columns(
    count: int, cells: Cells, texts: tuple[list[str], list[str]], ids: Codes
) -> dict[str, Column]:
    """path -> :class:`Column` over ``count`` runs, from the (run, value id) cells; fields
    every run holds alike are left out."""
    paths, values = texts
    names = sorted(set(paths))
    number = {p: i for i, p in enumerate(names)}
    path_of = np.array(
        [-1 if p.startswith(_SKIPPED_PREFIXES) else number[p] for p in paths], dtype=np.int32
    )
    runs, value_ids = cells
    # 32-bit codes: the passes over every cell are memory-bound, and halve with the width
    position = np.zeros(int(ids[-1]) + 1 if len(ids) else 0, dtype=np.int32)
    position[ids] = np.arange(len(ids), dtype=np.int32)
    value = position[value_ids]
    path = path_of[value]
    keep = path >= 0
    if not keep.all():
        runs, value, path = runs[keep], value[keep], path[keep]
    # one cell per (field, run): a dense table, -1 where a run lacks the field
    key = path.astype(np.int64) * count + runs
    flat = np.full(len(names) * count, -1, dtype=np.int32)
    flat[key] = value
    texts_of = list(values)
    # a (field, run) held by several cells kept only the last: the others read back changed
    lost = flat[key] != value
    if lost.any():
        several = np.zeros(len(flat), dtype=bool)
        several[key[lost]] = True
        several = several[key]
        flat[key[several]] = _joined(key[several], value[several].astype(np.int64), texts_of)
    table = flat.reshape(len(names), count)
    fields: dict[str, Column] = {}
    renumber = np.zeros(len(texts_of) + 1, dtype=np.int64)
    for j, name in enumerate(names):
        shifted = table[j] + 1  # 0: absent
        distinct = np.flatnonzero(np.bincount(shifted, minlength=len(texts_of) + 1))
        if len(distinct) == 1:
            continue  # every run holds one value, or none holds it
        absent = distinct[0] == 0
        held = distinct[1:] if absent else distinct
        renumber[held] = np.arange(len(held))
        if absent:
            renumber[0] = len(held)  # the absent last
        held_names = tuple(texts_of[v - 1] for v in held.tolist())
        names_of = (*held_names, ABSENT) if absent else held_names
        fields[name] = Column(names_of, renumber[shifted], bool(absent))
    return fields


def _joined(key: Codes, value: Codes, texts: list[str]) -> Codes:
    """A leaf held several times in one run (two GPUs, two VBIOSes) as one value: the
    sorted distinct texts of each key's values joined by ``|``, appended to ``texts``;
    returns the new value of each cell (cells of one key alike)."""
    order = np.lexsort((value, key))
    key, value = key[order], value[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    sizes = np.diff(np.r_[starts, len(key)])
    group = np.repeat(np.arange(len(starts)), sizes)
    padded = np.full((len(starts), int(sizes.max())), -1, dtype=np.int64)
    padded[group, np.arange(len(key)) - starts[group]] = value
    # runs of one fleet hold few distinct combinations (every run's two GPU indexes)
    combinations, which = np.unique(padded, axis=0, return_inverse=True)
    base = len(texts)
    for combination in combinations.tolist():
        texts.append("|".join(sorted({texts[v] for v in combination if v >= 0})))
    joined = np.empty(len(key), dtype=np.int64)
    joined[order] = base + which.reshape(-1)[group]
    return joined


def _installed(store: Store, listings: Column) -> dict[str, Column]:
    """``installed.NAME`` columns from the package listing each run's digest names."""
    unlisted = len(listings.names) - 1 if listings.absent else -1
    read = [{} if k == unlisted else _listing(store, ref) for k, ref in enumerate(listings.names)]
    packages = sorted({name for versions in read for name in versions})
    fields: dict[str, Column] = {}
    for name in packages:
        versions = [versions.get(name) for versions in read]
        distinct: list[str | None] = [*sorted({v for v in versions if v is not None})]
        missing = None in versions
        if missing:
            distinct.append(None)  # the absent last
        if len(distinct) == 1:
            continue
        lookup = np.array([distinct.index(v) for v in versions], dtype=np.int64)
        names = tuple(ABSENT if v is None else v for v in distinct)
        fields[INSTALLED + name] = Column(names, lookup[listings.codes], missing)
    return fields


def _listing(store: Store, ref: str) -> dict[str, str]:
    from expdna.digest.refs import ref_hex
    from expdna.store.errors import MissingObjectError

    hex_digest = ref_hex(ref)
    if hex_digest is None:
        return {}
    try:
        return _packages(store.objects.read_verified(hex_digest))
    except MissingObjectError:
        return {}  # the listing was not attached when the run was recorded
