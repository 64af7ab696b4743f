"""Schema versions: accept every 1.x, refuse other majors, rename legacy fields."""

from __future__ import annotations

import re
from typing import Any

from expdna.errors import ManifestError

SUPPORTED_MAJOR = 1
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?$")

#: Legacy dotted path -> current dotted path. Applied in order; the old key is removed.
#: A current value, when both are present, wins.
LEGACY_NAMES: tuple[tuple[str, str], ...] = (
    ("cli_args", "command.argv"),
    ("command.cli_args", "command.argv"),
    ("argv", "command.argv"),
    ("cwd", "command.cwd"),
    ("git", "code"),
    ("env", "config.selected_env"),
    ("config.env", "config.selected_env"),
    ("args", "config.resolved_args"),
    ("config.args", "config.resolved_args"),
)


def check_version(raw: dict[str, Any], source: str) -> tuple[int, int]:
    """The (major, minor) of ``raw``; a clear error for a missing or unsupported version."""
    if "schema_version" not in raw:
        raise ManifestError(source, "not an expdna manifest: no schema_version field")
    version = raw["schema_version"]
    match = _VERSION.match(version) if isinstance(version, str) else None
    if match is None:
        raise ManifestError(source, f"schema_version {version!r} is not of the form MAJOR.MINOR")
    major, minor = int(match.group(1)), int(match.group(2))
    if major != SUPPORTED_MAJOR:
        raise ManifestError(
            source,
            f"schema_version {version} is not supported: this expdna reads 1.x only",
        )
    return major, minor


def normalise_legacy(raw: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``raw`` with legacy field names moved to their current place."""
    doc = dict(raw)
    for old, new in LEGACY_NAMES:
        old_parent = _parent(doc, old.split(".")[:-1], create=False)
        old_key = old.rsplit(".", 1)[-1]
        if old_parent is None or old_key not in old_parent:
            continue
        value = old_parent.pop(old_key)
        new_parts = new.split(".")
        new_parent = _parent(doc, new_parts[:-1], create=True)
        if new_parent is not None:
            new_parent.setdefault(new_parts[-1], value)
    return doc


def _parent(doc: dict[str, Any], parts: list[str], *, create: bool) -> dict[str, Any] | None:
    node = doc
    for part in parts:
        child = node.get(part)
        if child is None and create:
            child = node[part] = {}
        elif isinstance(child, dict):
            child = node[part] = dict(child)  # copy on the way down: never edit the input
        if not isinstance(child, dict):
            return None
        node = child
    return node
