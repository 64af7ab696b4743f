"""The store form of a manifest, and the self-contained file form rebuilt from it.

In the store form, a patch whose inline text hashes to its ``digest`` has no ``text`` key:
the text is the blob ``code.<repo>.patch.digest``, stored once however many runs carry
it. A patch whose text does not hash to its digest (text cut to fit the 100 KB file cap)
keeps its text inline. The store form is written as compact UTF-8 JSON in document order,
so the same manifest always gives the same bytes and the same object.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from expdna.digest import hex_of
from expdna.digest.refs import parse_digest, ref
from expdna.manifest.canonical import normalise
from expdna.manifest.model import Manifest


@dataclass(frozen=True)
class StoreForm:
    doc: dict[str, Any]
    data: bytes
    digest: str
    #: 64-hex digest -> patch text bytes moved out of the document
    patches: dict[str, bytes] = field(default_factory=dict)


def dumps(doc: dict[str, Any]) -> bytes:
    """Compact JSON in document order; non-finite floats as the DNA's marker strings."""
    try:
        text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(normalise(doc), ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8")


def _patches(doc: dict[str, Any]) -> list[dict[str, Any]]:
    code = doc.get("code")
    if not isinstance(code, dict):
        return []
    found = []
    for repo in code.values():
        patch = repo.get("patch") if isinstance(repo, dict) else None
        if isinstance(patch, dict):
            found.append(patch)
    return found


def to_store_form(doc: dict[str, Any]) -> StoreForm:
    """Move every patch and config file text that hashes to its digest out of ``doc`` (a
    fresh dict)."""
    doc, patches = move_patches(doc)
    data = dumps(doc)
    return StoreForm(doc=doc, data=data, digest=hex_of(data), patches=patches)


def move_patches(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, bytes]]:
    """:func:`to_store_form` without the dump: the store-form document and the moved texts."""
    patches: dict[str, bytes] = {}
    code = doc.get("code")
    if isinstance(code, dict) and code:
        code = {name: dict(repo) if isinstance(repo, dict) else repo for name, repo in code.items()}
        doc = {**doc, "code": code}
        for repo in code.values():
            patch = repo.get("patch") if isinstance(repo, dict) else None
            text = patch.get("text") if isinstance(patch, dict) else None
            if not isinstance(patch, dict) or not isinstance(text, str):
                continue
            data = text.encode("utf-8")
            hex_digest = hex_of(data)
            if patch.get("digest") == ref(hex_digest):
                patches[hex_digest] = data
                repo["patch"] = {k: v for k, v in patch.items() if k != "text"}
    doc, texts = move_config_texts(doc)
    patches.update(texts)
    return doc, patches


def _config_details(doc: dict[str, Any]) -> dict[str, Any]:
    config = doc.get("config")
    details = config.get("config_file_details") if isinstance(config, dict) else None
    return details if isinstance(details, dict) else {}


def move_config_texts(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Config file texts (``config.config_file_details.*.text``) moved out as patches are.

    They are stored as blobs of kind ``patch``: text a manifest references by digest in
    place of its inline form (a kind of their own would need a migration of ``blobs``).
    """
    details = _config_details(doc)
    texts: dict[str, bytes] = {}
    if not any(isinstance(r, dict) and isinstance(r.get("text"), str) for r in details.values()):
        return doc, texts
    moved = {}
    for path, record in details.items():
        text = record.get("text") if isinstance(record, dict) else None
        if isinstance(text, str):
            data = text.encode("utf-8")
            hex_digest = hex_of(data)
            if record.get("digest") == ref(hex_digest):
                texts[hex_digest] = data
                record = {k: v for k, v in record.items() if k != "text"}
        moved[path] = record
    return {**doc, "config": {**doc["config"], "config_file_details": moved}}, texts


def moved_config_texts(doc: dict[str, Any]) -> list[str]:
    """The 64-hex digests of the config file texts a store-form document references."""
    return [
        parse_digest(record["digest"])
        for record in _config_details(doc).values()
        if isinstance(record, dict)
        and "text" not in record
        and isinstance(record.get("digest"), str)
        and not record.get("truncated")
    ]


def moved_patches(doc: dict[str, Any]) -> list[str]:
    """The 64-hex digests of the patch texts a store-form document references."""
    found = []
    for patch in _patches(doc):
        if "text" not in patch and isinstance(patch.get("digest"), str):
            found.append(parse_digest(patch["digest"]))
    return found


def to_file_form(doc: dict[str, Any], read: Callable[[str], bytes]) -> dict[str, Any]:
    """The self-contained document: moved patch texts back inline, in the model's key order.

    ``read`` returns a blob's bytes by 64-hex digest. The result equals
    ``manifest.to_dict()`` of the manifest that was recorded.
    """
    doc = json.loads(json.dumps(doc))
    for patch in _patches(doc):
        if "text" not in patch and isinstance(patch.get("digest"), str):
            patch["text"] = read(parse_digest(patch["digest"])).decode("utf-8")
    for digest in moved_config_texts(doc):
        for record in _config_details(doc).values():
            if record.get("digest") == ref(digest) and "text" not in record:
                record["text"] = read(digest).decode("utf-8")
    return Manifest.model_validate(doc).to_dict()
