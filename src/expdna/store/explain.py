"""What ``expdna explain`` reads: the runs of one setup (or of ``--where`` filters), the
outcome of each, and every recorded field of each run, as the index holds them.

The selection is one indexed lookup: ``runs.setup`` (:func:`expdna.manifest.family.setup_of`)
or the ``--where`` filters of ``runs`` (:func:`expdna.store.queries.filtered`). The
outcome is a final metric (the ``metrics`` table) or a fact (``status.state``). A run's
fields are its manifest's leaves flattened as the recorder flattens them into facts
(:func:`expdna.store.record.flatten.flatten`), read from its stored manifest: the index
keys facts by value, not by run, so a run's own facts are one object read away. Each
distinct package listing (``environment.packages_digest``) is read once and adds every
installed package as ``installed.NAME``.

A field's value for a run is its leaf's text; a path with several leaves (one per GPU or
per node) is their sorted texts joined by ``|``; a path a run lacks is :data:`ABSENT`.
The statistics are in :mod:`expdna.explain`.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from expdna.errors import InvalidInputError
from expdna.store.queries import Filter, filtered

if TYPE_CHECKING:
    from expdna.store.facade import Store

log = logging.getLogger(__name__)

#: The value of a field a run does not record.
ABSENT = "(absent)"
#: Fact path of how a run ended (the ``status`` section).
STATUS_PATH = "status.state"
#: Field paths never explained: the outcome itself, and collection notes about the run.
_SKIPPED_PREFIXES = ("status.", "collection.", "tracking.", "lineage.")
INSTALLED = "installed."


@dataclass(frozen=True)
class Fleet:
    """The selected runs (in index order), their outcome and their fields.

    ``outcome``: per run, the metric's value, or 1.0 / 0.0 for a state outcome; None where
    a run has none (left out of every test). ``fields``: path -> one value per run.
    """

    runs: list[str]
    outcome: list[float | None]
    fields: dict[str, list[str]] = field(default_factory=dict)
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


def _leaves(doc: dict[str, Any]) -> dict[str, str]:
    from expdna.store.record.flatten import flatten

    facts, _ = flatten(doc)
    leaves: dict[str, str] = {}
    several: dict[str, list[str]] = {}
    for path, value in facts:
        if path.startswith(_SKIPPED_PREFIXES):
            continue
        if path in leaves:
            several.setdefault(path, [leaves[path]]).append(value)
        leaves[path] = value
    for path, values in several.items():
        leaves[path] = "|".join(sorted(values))
    return leaves


#: Top-level keys that hold no field to explain (``runs`` columns, the outcome, notes).
_NOT_SECTIONS = frozenset(
    {"schema_version", "run_id", "generated_at", "dna", "status", "collection", "tracking"}
    | {"lineage", "metrics"}
)
#: Distinct sections kept at most while reading one fleet.
MAX_SECTIONS = 100_000


@dataclass
class _Sections:
    """Each run's top-level sections, flattened once per distinct section: runs of one
    setup repeat most of theirs (a machine's hardware and environment, the setup's code and
    config), so a fleet costs a JSON dump per section and a flatten per distinct one."""

    #: (key, section JSON) -> entry number
    seen: dict[tuple[str, str], int] = field(default_factory=dict)
    #: key -> the leaves of each entry
    entries: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    #: key -> (run position, entry number)
    holders: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def _entry(self, key: str, text: str, leaves: Callable[[], dict[str, str]]) -> int:
        found = self.seen.get((key, text))
        if found is None:
            entries = self.entries.setdefault(key, [])
            found = len(entries)
            entries.append(leaves())
            if len(self.seen) < MAX_SECTIONS:
                self.seen[(key, text)] = found
        return found

    def add(self, position: int, key: str, value: Any) -> None:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
        entry = self._entry(key, text, lambda: _leaves({key: value}))
        self.holders.setdefault(key, []).append((position, entry))

    def add_listing(self, position: int, ref: str, read: Callable[[], dict[str, str]]) -> None:
        def leaves() -> dict[str, str]:
            return {INSTALLED + name: version for name, version in read().items()}

        entry = self._entry(INSTALLED, ref, leaves)
        self.holders.setdefault(INSTALLED, []).append((position, entry))

    def columns(self, count: int) -> dict[str, list[str]]:
        """path -> one value per run (:data:`ABSENT` where a run has none), sorted by path."""
        fields: dict[str, list[str]] = {}
        for key, entries in self.entries.items():
            slots = [-1] * count
            for position, entry in self.holders[key]:
                slots[position] = entry
            every = [*entries, {}]  # slot -1: a run without this section
            paths = sorted({path for leaves in entries for path in leaves})
            for path in paths:
                fields[path] = [every[slot].get(path, ABSENT) for slot in slots]
        return dict(sorted(fields.items()))


def setup_runs(store: Store, ref: str) -> str:
    """The setup digest of the run ``ref`` names (filled in by ``expdna db upgrade`` for a
    run recorded before setup digests; computed from its manifest meanwhile)."""
    from sqlalchemy import select

    from expdna.store.index.models import Run

    record = store.get(ref)
    with store.index.read() as conn:
        found = conn.execute(select(Run.setup).where(Run.run_id == record.run_id)).scalar()
    if found is not None:
        return str(found)
    from expdna.manifest.family import setup_of

    return setup_of(store.show(record.run_id), version=record.dna_version)


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
    from sqlalchemy import select

    from expdna.store.index.models import Blob, Metric, Run

    if setup is None and not filters:
        raise InvalidInputError("give the runs to explain: --same-setup RUN or --where PATH=VALUE")
    with store.index.read() as conn:
        stmt = filtered(
            conn,
            select(Run.id, Run.run_id, Blob.digest).join(Blob, Blob.id == Run.manifest_blob_id),
            filters=filters,
        )
        if stmt is None:
            return Fleet([], [], {}, setup)
        if setup is not None:
            stmt = stmt.where(Run.setup == setup)
        rows = conn.execute(stmt.order_by(Run.id)).all()
        values: dict[int, float] = {}
        if metric is not None:
            chosen = stmt.with_only_columns(Run.id).scalar_subquery()
            values = {
                int(pk): float(value)
                for pk, value in conn.execute(
                    select(Metric.run_pk, Metric.value).where(
                        Metric.name == metric, Metric.run_pk.in_(chosen)
                    )
                )
            }
    runs = [str(run_id) for _, run_id, _ in rows]
    sections = _Sections()
    states: list[str | None] = []
    for position, (_, _, digest) in enumerate(rows):
        doc = json.loads(store.objects.read_verified(digest))
        states.append(_state(doc))
        for key, value in doc.items():
            if key not in _NOT_SECTIONS:
                sections.add(position, key, value)
        environment = doc.get("environment")
        packages = environment.get("packages_digest") if isinstance(environment, dict) else None
        if isinstance(packages, str) and packages.startswith("blake3:"):
            sections.add_listing(position, packages, functools.partial(_listing, store, packages))
    outcome: list[float | None]
    if state is not None:
        outcome = [None if s is None else float(s == state) for s in states]
    else:
        outcome = [values.get(int(pk)) for pk, _, _ in rows]
    fields = sections.columns(len(rows))
    log.debug("explain: %d runs, %d fields", len(runs), len(fields))
    return Fleet(runs, outcome, fields, setup)


def _state(doc: dict[str, Any]) -> str | None:
    """The ``status.state`` fact of a manifest document (the outcome, left out of
    :func:`_leaves`), as the index holds it."""
    from expdna.store.record.flatten import fact_value

    status = doc.get("status")
    return fact_value(status.get("state")) if isinstance(status, dict) else None


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
