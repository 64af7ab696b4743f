"""``expdna data verify``: the datasets a manifest recorded against the files on disk now.

It re-digests each dataset and names every file that differs, when it has the recorded
listing: embedded in the manifest for small datasets (at most
:data:`expdna.collectors.data.EMBED_LISTING_FILES` files in all), else from the local
digest cache, else from a caller's ``listing_source`` (the store). Each candidate listing
is trusted only if it hashes to the recorded digest. Without one, the counts that differ.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from expdna.collectors.data import (
    EMBED_LISTING_FILES,
    ListingSource,
    ProgressFn,
    Row,
    digest_root,
    listing_bytes,
    parse_listing,
)
from expdna.digest import parse_digest, ref_of
from expdna.errors import InvalidDigestError

if TYPE_CHECKING:
    from expdna.digest.cache import DigestCache


@dataclass
class DatasetCheck:
    """One recorded dataset against what is on disk now."""

    root: str
    path: str | None
    status: str  # ok | changed | missing | unverifiable
    recorded: dict[str, Any]
    current: dict[str, Any] | None = None
    detail: str | None = None  # "files" when per-file lists are exact, else "counts"
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class DataCheck:
    datasets: list[DatasetCheck]

    @property
    def ok(self) -> bool:
        return all(d.status == "ok" for d in self.datasets)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "datasets": [d.to_dict() for d in self.datasets]}


def resolve_root(recorded: str, data_roots: Sequence[tuple[str, str]]) -> str | None:
    """Where a recorded root is now: ``data_roots`` (OLD, NEW) first, longest OLD wins;
    then ``~`` and ``<HOME>`` are this user's home. None when redaction left it unusable."""
    for old, new in sorted(data_roots, key=lambda pair: -len(pair[0])):
        base = old.rstrip("/")
        if recorded == base or recorded.startswith(base + "/"):
            return (new.rstrip("/") + recorded[len(base) :]) or "/"
    if recorded == "<HOME>" or recorded.startswith("<HOME>/"):
        recorded = str(Path.home()) + recorded[len("<HOME>") :]
    elif recorded == "~" or recorded.startswith("~/"):  # the recording user's own home
        recorded = str(Path.home()) + recorded[1:]
    if ("<" in recorded and ">" in recorded) or "***" in recorded:
        return None
    return recorded


def _recorded_rows(
    dataset: Mapping[str, Any],
    digest: str,
    cache: DigestCache | None,
    listing_source: ListingSource | None,
) -> list[Row] | None:
    """The recorded listing, from wherever it is, checked against the recorded digest."""
    blobs: list[Callable[[], bytes | None]] = []
    embedded = dataset.get("listing")
    if isinstance(embedded, list):

        def from_manifest() -> bytes | None:
            rows = [(str(r[0]), int(r[1]), parse_digest(str(r[2]))) for r in embedded]
            return listing_bytes(rows)

        blobs.append(from_manifest)
    if cache is not None:
        blobs.append(lambda: cache.listing(digest))
    if listing_source is not None:
        blobs.append(lambda: listing_source(digest))
    for get in blobs:
        try:
            blob = get()
            if blob is not None and ref_of(blob) == digest:  # redaction may have edited it
                return parse_listing(blob)
        except (TypeError, ValueError, IndexError, InvalidDigestError):
            continue
    return None


def _diff(check: DatasetCheck, old: list[Row], new: list[Row]) -> None:
    before = {rel: (size, hexd) for rel, size, hexd in old}
    after = {rel: (size, hexd) for rel, size, hexd in new}
    check.changed = sorted(r for r in before.keys() & after.keys() if before[r] != after[r])
    check.missing = sorted(before.keys() - after.keys())
    check.new = sorted(after.keys() - before.keys())


def verify_dataset(
    dataset: Mapping[str, Any],
    *,
    data_roots: Sequence[tuple[str, str]] = (),
    cache: DigestCache | None = None,
    progress: ProgressFn | None = None,
    listing_source: ListingSource | None = None,
    use_cache: bool = True,
) -> DatasetCheck:
    recorded_root = str(dataset.get("root"))
    recorded = {k: dataset.get(k) for k in ("digest", "files", "bytes")}
    path = resolve_root(recorded_root, data_roots)
    check = DatasetCheck(recorded_root, path, "ok", recorded)
    digest = recorded["digest"]
    if not isinstance(digest, str):
        check.status, check.note = "unverifiable", "no digest was recorded for this dataset"
        return check
    if path is None:
        check.status = "missing"
        check.note = "the recorded root was redacted; give its location with --data-root"
        return check
    if not os.path.exists(path):
        check.status, check.note = "missing", "no such file or directory"
        return check
    scan = digest_root(Path(path), cache=cache if use_cache else None, progress=progress)
    check.current = {"digest": scan.digest(), **scan.counts()}
    if not scan.complete:
        check.status, check.note = "unverifiable", "; ".join(scan.problems)
        return check
    if check.current["digest"] == digest:
        return check
    check.status = "changed"
    old = _recorded_rows(dataset, digest, cache, listing_source)
    if old is None:
        check.detail = "counts"
        check.note = (
            "per-file detail needs the recorded listing blob: it is embedded only "
            f"for datasets of up to {EMBED_LISTING_FILES} files, and is not in "
            "the local cache or a store"
        )
    else:
        check.detail = "files"
        _diff(check, old, scan.rows)
    return check


def verify_data(
    datasets: Iterable[Mapping[str, Any]],
    *,
    data_roots: Sequence[tuple[str, str]] = (),
    use_cache: bool = True,
    progress: ProgressFn | None = None,
    listing_source: ListingSource | None = None,
) -> DataCheck:
    """Re-digest recorded datasets (``manifest.to_dict()["data"]["datasets"]``).

    Without ``use_cache`` every file is hashed again; recorded listings are still looked
    up in the cache, which is safe because they are checked against the recorded digest.
    """
    from expdna.digest.cache import open_cache

    cache = open_cache(True)
    try:
        return DataCheck(
            [
                verify_dataset(
                    d,
                    data_roots=data_roots,
                    cache=cache,
                    listing_source=listing_source,
                    progress=progress,
                    use_cache=use_cache,
                )
                for d in datasets
            ]
        )
    finally:
        if cache is not None:
            cache.close()
