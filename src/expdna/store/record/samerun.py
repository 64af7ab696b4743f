"""Whether a manifest for a recorded run id is that run, as the hook wrote it later.

The training hook records a run once, at its start, and sends what it learns afterwards
(final metrics, a tracker run tied at finish) to the store as log entries; its manifest
file holds them too. Recording that file again must be ``skipped``, not a conflict: both
documents are the run, and differ only in fields outside the DNA that the hook adds after
recording (:data:`LATE`), or in a patch or config text the file had to cut to its size
cap (the digest, which names the whole text, is the same), or in how a value JSON cannot
carry exactly is written: the file writes an integer beyond 2^53 (``torch.initial_seed()``)
as its decimal string (:mod:`expdna.manifest.canonical`), the store form the hook recorded
keeps the number. The store keeps what it holds (its metrics come from the log, its texts
whole).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from expdna.errors import ExpdnaError
from expdna.manifest.canonical import normalise
from expdna.manifest.io import MAX_READ_BYTES
from expdna.store.objects.interface import ObjectStore
from expdna.store.record.prepare import Prepared

#: Top-level fields the hook fills in after the run is recorded; none is in the DNA.
LATE = ("metrics", "tracking", "status")

#: (stored manifest digest, the new manifest prepared) -> whether they are one run.
SameRun = Callable[[str, Prepared], bool]


def _without_text(record: Any) -> Any:
    """A patch or config file record without its text: the digest names the text, and
    the file form may hold it cut to the size cap where the store holds it whole."""
    if not isinstance(record, dict):
        return record
    return {k: v for k, v in record.items() if k not in ("text", "truncated")}


def _core(doc: Any) -> Any:
    # Both sides in the file's form of values: an unsafe integer is its string in a file,
    # a number in the store form of the object the hook recorded.
    doc = normalise(doc)
    if not isinstance(doc, dict):
        return doc
    core = {key: value for key, value in doc.items() if key not in LATE}
    code = core.get("code")
    if isinstance(code, dict):
        core["code"] = {
            name: {**repo, "patch": _without_text(repo.get("patch"))}
            if isinstance(repo, dict)
            else repo
            for name, repo in code.items()
        }
    config = core.get("config")
    details = config.get("config_file_details") if isinstance(config, dict) else None
    if isinstance(config, dict) and isinstance(details, dict):
        trimmed = {path: _without_text(record) for path, record in details.items()}
        core["config"] = {**config, "config_file_details": trimmed}
    collection = core.get("collection")
    if isinstance(collection, dict) and isinstance(collection.get("redacted"), list):
        kept = [
            p
            for p in collection["redacted"]
            if not (isinstance(p, str) and p.split(".", 1)[0] in LATE)
        ]
        core["collection"] = {**collection, "redacted": kept}
    return core


def same_run(objects: ObjectStore) -> SameRun:
    """The check, reading stored manifests from ``objects``."""

    def same(stored: str, prepared: Prepared) -> bool:
        try:
            old = json.loads(objects.read_verified(stored, max_bytes=MAX_READ_BYTES))
            data = prepared.blobs[0].data or objects.read_verified(
                prepared.manifest_digest, max_bytes=MAX_READ_BYTES
            )
            new = json.loads(data)
        except (ExpdnaError, ValueError):
            return False
        return bool(_core(old) == _core(new))

    return same
