"""Stability: how much the final metrics of one setup wander between repeated runs.

Two halves. The statistics are pure functions over ``(run id, metric, value)`` rows:
count, mean, sample standard deviation (n - 1), min, max and coefficient of variation.
The query (:func:`stability`) finds the group of runs and reads their metrics from the
index's ``metrics`` table.

The group is every run with the target's DNA. ``ignore`` widens it to runs whose DNA
differs only in ignored fields: each pattern is added to ``config.dna_ignore`` of the
stored manifests and the DNA recomputed, and a run belongs when its recomputed DNA equals
the target's. Two shortcuts keep that cheap on a large store:

- a pattern can only remove members of the sections its leading literal names
  (``config.resolved_args.seed`` touches ``config`` alone), so a run that differs from the
  target in any other section can never join: candidates are selected in SQL by the
  ``runs`` section digest columns of every untouched section;
- runs with one DNA have identical identity projections, and ignoring more removes the
  same members from identical trees, so the recomputed DNA depends on the stored DNA
  alone: one manifest is read and hashed per distinct candidate DNA, not per run.

Only runs that completed are pooled (and those recorded before runs had a status, whose
state is unknown): a run that failed, was interrupted or is still running (or died
without a word) is left out and named in ``left_out``, unless ``include_failed``.
"""

from __future__ import annotations

import json
import logging
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from expdna.errors import InvalidInputError
from expdna.store.index.chunks import chunks
from expdna.store.index.read import Reader, when
from expdna.store.queries import SECTIONS as DNA_SECTIONS

if TYPE_CHECKING:
    from expdna.store.facade import Store

log = logging.getLogger(__name__)


_GLOB_CHARS = "*?["


# -- statistics (pure) -------------------------------------------------------------------


@dataclass(frozen=True)
class MetricStats:
    """One metric over a group of runs. ``std`` and ``cv`` are ``None`` where undefined:
    ``std`` for a single run (a sample deviation needs two) or past the double range,
    ``cv`` also for a zero mean."""

    n: int
    mean: float
    std: float | None
    min: float
    max: float
    cv: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "mean": self.mean,
            "std": self.std,
            "min": self.min,
            "max": self.max,
            "cv": self.cv,
        }


def summarise(values: Sequence[float]) -> MetricStats | None:
    """The statistics of ``values``; ``None`` for no values (nobody reported the metric)."""
    if not values:
        return None
    # statistics.mean and stdev sum exactly (as fractions) and round once: the mean of
    # 0.1, 0.2, 0.3 is 0.2, where a float sum divided by 3 gives 0.19999999999999998.
    mean = float(statistics.mean(values))  # exact, so between min and max: finite
    std = _stdev(values) if len(values) > 1 else None
    cv = std / abs(mean) if std is not None and mean != 0 else None
    return MetricStats(n=len(values), mean=mean, std=std, min=min(values), max=max(values), cv=cv)


def _stdev(values: Sequence[float]) -> float | None:
    """The sample deviation, or None past the double range (values near 1.7e308 of both
    signs: ``statistics.stdev`` raises OverflowError rounding its exact result)."""
    try:
        return float(statistics.stdev(values))
    except OverflowError:
        return None


def summarise_rows(
    rows: Iterable[tuple[str, str, float]], names: Sequence[str] = ()
) -> dict[str, MetricStats]:
    """Per metric, the statistics of ``(run_id, name, value)`` rows (one value per run).

    ``names``: only these metrics, in this order; default every metric present, sorted.
    A metric no row reports is absent from the result. Non-finite values never reach the
    index (the store keeps only finite numbers), and are skipped here too.
    """
    values: dict[str, dict[str, float]] = {}
    for run_id, name, value in rows:
        if math.isfinite(value):
            values.setdefault(name, {})[run_id] = value
    order = list(dict.fromkeys(names)) if names else sorted(values)
    result: dict[str, MetricStats] = {}
    for name in order:
        stats = summarise(list(values.get(name, {}).values()))
        if stats is not None:
            result[name] = stats
    return result


# -- which sections an ignore pattern can touch ------------------------------------------


def touched_sections(pattern: str) -> frozenset[str]:
    """The DNA sections whose members ``pattern`` (a ``dna_ignore`` glob) could remove.

    A member's path is ``<section>.<key>...``; fnmatch's ``*`` also matches dots. The
    pattern's literal head (before its first glob character) decides: with a dot in it,
    the section is the part before that dot; without, any section the head begins.
    """
    cut = min((i for i in (pattern.find(c) for c in _GLOB_CHARS) if i >= 0), default=len(pattern))
    head = pattern[:cut]
    if "." in head:
        section = head.split(".", 1)[0]
        return frozenset({section}) if section in DNA_SECTIONS else frozenset()
    if cut == len(pattern):
        return frozenset()  # a bare name with no dot matches no member path
    return frozenset(s for s in DNA_SECTIONS if s.startswith(head))


def check_ignore(patterns: Iterable[str]) -> list[str]:
    """The patterns, deduplicated; :class:`InvalidInputError` for one that touches no section."""
    checked: list[str] = []
    for pattern in patterns:
        if not pattern or pattern != pattern.strip() or not touched_sections(pattern):
            raise InvalidInputError(
                f"--ignore {pattern!r}: not a dotted path inside a DNA section "
                f"({', '.join(DNA_SECTIONS)}), e.g. config.resolved_args.seed"
            )
        if pattern not in checked:
            checked.append(pattern)
    return checked


def recomputed_dna(doc: dict[str, Any], patterns: Sequence[str]) -> str:
    """The DNA of the manifest document ``doc`` with ``patterns`` added to its dna_ignore."""
    config = dict(doc.get("config") or {})
    from expdna.manifest.dna import compute_dna
    from expdna.manifest.family import with_derived_seed_ignores

    added = with_derived_seed_ignores(patterns)
    config["dna_ignore"] = [*(config.get("dna_ignore") or []), *added]
    return compute_dna({**doc, "config": config}).value


# -- the query ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Stability:
    """The answer: the group of runs and each metric's statistics over it.

    ``dnas``: the distinct DNAs pooled (the target's first). ``missing``: requested metrics
    no run of the group reported. ``unmatched``: ignore patterns that remove nothing from
    the target's own DNA (most often a typo).
    """

    dna: str
    runs: list[str]
    ignored: list[str]
    dnas: list[str]
    metrics: dict[str, MetricStats]
    missing: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    #: The family digest pooled (``--across-seeds``), else None.
    family: str | None = None
    #: Run id -> the DNA sections it could not collect, for the incomplete runs of the group.
    incomplete: dict[str, list[str]] = field(default_factory=dict)
    #: Run id -> its state, for the runs of the group left out (not completed).
    left_out: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "incomplete": dict(self.incomplete),
            "left_out": dict(self.left_out),
            "dna": self.dna,
            "runs": list(self.runs),
            "ignored": list(self.ignored),
            "dnas": list(self.dnas),
            "metrics": {name: stats.to_dict() for name, stats in self.metrics.items()},
        }


def _widened(
    conn: Reader,
    read: Callable[[str], bytes],
    dna: str,
    sections: dict[str, str],
    patterns: Sequence[str],
) -> tuple[list[str], list[str]]:
    """The DNAs pooled with ``dna`` under ``patterns``, and the patterns that matched nothing."""
    from expdna.manifest.family import with_derived_seed_ignores

    # A seed argument's pattern also removes the training field derived from it.
    expanded = with_derived_seed_ignores(patterns)
    touched = frozenset().union(*(touched_sections(p) for p in expanded))
    kept = [s for s in DNA_SECTIONS if s not in touched]
    same = "".join(f" AND runs.{s}_digest = :{s}" for s in kept)
    # One stored manifest per distinct DNA (see the module doc: it stands for them all).
    candidates: dict[str, str] = {
        candidate: digest
        for candidate, digest in conn.rows(
            "SELECT runs.dna, min(blobs.digest) FROM runs "
            f"JOIN blobs ON blobs.id = runs.manifest_blob_id WHERE 1 = 1{same} GROUP BY runs.dna",
            {s: sections[s] for s in kept},
        )
    }
    log.debug("stability: %d candidate DNAs outside %s", len(candidates), sorted(touched))
    target_doc = json.loads(read(candidates[dna]))
    target = recomputed_dna(target_doc, patterns)
    # Compared in the current DNA version, which a manifest of an older one is not stored in.
    plain = recomputed_dna(target_doc, [])
    unmatched = [p for p in patterns if recomputed_dna(target_doc, [p]) == plain]
    pooled = [dna]
    for other in sorted(candidates):
        if other != dna and recomputed_dna(json.loads(read(candidates[other])), patterns) == target:
            pooled.append(other)
    return pooled, unmatched


#: States whose runs are pooled; None is a run recorded before status existed (unknown).
POOLED_STATES = ("completed", None)


def _pooled(state: str | None, include_failed: bool) -> bool:
    return include_failed or state in POOLED_STATES


def _runs(
    conn: Reader, dnas: Sequence[str], include_failed: bool
) -> tuple[list[str], dict[str, list[str]], dict[str, str]]:
    """Run ids of ``dnas``, oldest first, the unknown sections of incomplete ones, and the
    runs left out for their state."""
    found: list[tuple[datetime, str]] = []
    incomplete: dict[str, list[str]] = {}
    left_out: dict[str, str] = {}
    for chunk in chunks(dnas):
        for moment, run_id, unknown, state in conn.rows(
            "SELECT generated_at, run_id, unknown, state FROM runs WHERE dna IN :dnas",
            {"dnas": chunk},
        ):
            if not _pooled(state, include_failed):
                left_out[run_id] = state or "unknown"
                continue
            found.append((when(moment), run_id))
            if unknown:
                incomplete[run_id] = unknown.split(",")
    return [run_id for _, run_id in sorted(found)], incomplete, left_out


def _family_dnas(conn: Reader, family: str) -> list[str]:
    """The distinct DNAs of the runs of one family."""
    found = conn.column("SELECT dna FROM runs WHERE family = :family", {"family": family})
    return sorted({str(dna) for dna in found})


def _metric_rows(
    conn: Reader, dnas: Sequence[str], names: Sequence[str], include_failed: bool
) -> list[tuple[str, str, float]]:
    sql = (
        "SELECT runs.run_id, metrics.name, metrics.value FROM metrics "
        "JOIN runs ON runs.id = metrics.run_pk WHERE runs.dna IN :dnas"
    )
    if names:
        sql += " AND metrics.name IN :names"
    if not include_failed:
        sql += " AND (runs.state IS NULL OR runs.state = 'completed')"
    rows: list[tuple[str, str, float]] = []
    for chunk in chunks(dnas):
        found = conn.rows(sql, {"dnas": chunk, "names": list(names)})
        rows += [(str(run_id), str(name), float(value)) for run_id, name, value in found]
    return rows


def stability(
    store: Store,
    ref: str,
    *,
    metrics: Sequence[str] = (),
    ignore: Sequence[str] = (),
    across_seeds: bool = False,
    include_failed: bool = False,
) -> Stability:
    """Statistics of the final metrics of every run sharing the DNA of ``ref``.

    ``ref``: a DNA prefix (at least 6 hex) or a run id; an ambiguous prefix raises
    :class:`~expdna.store.errors.AmbiguousPrefixError` (exit 2), an unknown one
    :class:`~expdna.store.errors.RunNotFoundError` (exit 1). ``metrics``: only these
    (default all). ``ignore``: ``dna_ignore`` globs that widen the group (module doc).
    ``across_seeds``: the group is every run of the target's family (its DNA with every seed
    left out), the "N seeds, one setup" question. ``include_failed``: pool every run of the
    group whatever its state (by default only completed runs and those of unknown state).
    """
    patterns = check_ignore(ignore)
    names = list(dict.fromkeys(metrics))
    target = store.get(ref)
    family: str | None = None
    if across_seeds:
        if target.family is None:  # recorded before family digests: from its manifest
            from expdna.manifest.family import family_of

            family = family_of(store.show(target.run_id))
        else:
            family = target.family
    with store.reads.read() as conn:
        unmatched: list[str] = []
        dnas = [target.dna]
        if patterns:
            dnas, unmatched = _widened(
                conn, store.objects.read_verified, target.dna, target.sections, patterns
            )
        if family is not None:
            dnas += [d for d in _family_dnas(conn, family) if d not in dnas]
        runs, incomplete, left_out = _runs(conn, dnas, include_failed)
        rows = _metric_rows(conn, dnas, names, include_failed)
    summary = summarise_rows(rows, names)
    return Stability(
        dna=target.dna,
        runs=runs,
        ignored=patterns,
        dnas=dnas,
        metrics=summary,
        missing=[n for n in names if n not in summary],
        unmatched=unmatched,
        family=family,
        incomplete=incomplete,
        left_out=left_out,
    )
