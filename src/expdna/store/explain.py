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

import json
import logging
from collections.abc import Sequence
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
    count = len(rows)
    # One column per path, filled run by run: no per-run dict of every path is kept.
    fields: dict[str, list[str]] = {}
    states: list[str | None] = []
    listings: dict[str, dict[str, str]] = {}
    for position, (_, _, digest) in enumerate(rows):
        doc = json.loads(store.objects.read_verified(digest))
        states.append(_state(doc))
        leaves = _leaves(doc)
        packages = leaves.get("environment.packages_digest")
        if packages is not None and packages.startswith("blake3:"):
            if packages not in listings:
                listings[packages] = _listing(store, packages)
            leaves.update({INSTALLED + k: v for k, v in listings[packages].items()})
        for path, value in leaves.items():
            column = fields.get(path)
            if column is None:
                column = fields[path] = [ABSENT] * count
            column[position] = value
    outcome: list[float | None]
    if state is not None:
        outcome = [None if s is None else float(s == state) for s in states]
    else:
        outcome = [values.get(int(pk)) for pk, _, _ in rows]
    fields = dict(sorted(fields.items()))
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
