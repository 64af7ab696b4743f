"""Collected sections in, a validated, redacted manifest with its DNA out."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from expdna.digest import ref_of
from expdna.manifest.dna import compute_dna
from expdna.manifest.escape import escape_tree
from expdna.manifest.model import SCHEMA_VERSION, Manifest
from expdna.manifest.redact import redact_tree
from expdna.manifest.runid import iso_utc, new_run_id


def _first_commit(code: dict[str, Any]) -> str | None:
    for repo in code.values():
        if isinstance(repo, dict) and isinstance(repo.get("commit"), str):
            return str(repo["commit"])
    return None


def _rehash_patches(code: dict[str, Any]) -> None:
    """Patch digests name the redacted text: the only text that is ever stored or shared."""
    for repo in code.values():
        patch = repo.get("patch") if isinstance(repo, dict) else None
        if isinstance(patch, dict) and isinstance(patch.get("text"), str):
            data = patch["text"].encode("utf-8")
            patch["digest"] = ref_of(data)
            patch["size"] = len(data)


def _rehash_config_files(config: dict[str, Any]) -> None:
    """Config file digests name the redacted text too (redaction may have changed it again)."""
    details = config.get("config_file_details") if isinstance(config, dict) else None
    if not isinstance(details, dict):
        return
    files = config.setdefault("config_files", {})
    for path, record in details.items():
        if isinstance(record, dict) and isinstance(record.get("text"), str):
            record["digest"] = ref_of(record["text"].encode("utf-8"))
            if path in files:
                files[path] = record["digest"]


def build_manifest(
    sections: dict[str, dict[str, Any]],
    *,
    collection: dict[str, Any] | None = None,
    run_id: str | None = None,
    now: datetime | None = None,
    dna_ignore: list[str] | None = None,
    redact: bool = True,
    unknown: dict[str, str] | None = None,
) -> Manifest:
    """Assemble, redact, validate and fingerprint one manifest.

    ``sections`` maps section names (``command``, ``code``, ``config``, ...) to the dicts
    collectors returned; ``unknown`` names the DNA sections a collector could not finish,
    with the reason. Redaction runs before the DNA, so the DNA never depends on a secret.
    """
    now = now or datetime.now(timezone.utc)
    code = sections.get("code", {})
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id or new_run_id(now, _first_commit(code)),
        "generated_at": iso_utc(now),
        **{name: value for name, value in sections.items() if value},
        "collection": dict(collection or {}),
    }
    if dna_ignore:
        doc.setdefault("config", {})["dna_ignore"] = list(dna_ignore)
    if unknown:
        doc["unknown"] = dict(sorted(unknown.items()))
    # Undecodable OS bytes (argv, environment, paths) in their lossless escaped form.
    doc = escape_tree(doc)
    redacted: list[str] = []
    if redact:
        doc, redacted = redact_tree(doc)
    _rehash_patches(doc.get("code", {}))
    _rehash_config_files(doc.get("config", {}))
    doc["collection"]["redacted"] = redacted
    manifest = Manifest.model_validate(doc)
    manifest.dna = compute_dna(manifest)
    return manifest
