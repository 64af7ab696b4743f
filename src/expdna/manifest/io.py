"""Reading manifests defensively and writing them atomically under the size cap."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from expdna.errors import ManifestError, ManifestTooLargeError, WriteError, quoted
from expdna.manifest.canonical import normalise
from expdna.manifest.model import Manifest
from expdna.manifest.versioning import check_version, normalise_legacy
from expdna.regular import NotRegularFileError, check_output, open_regular

log = logging.getLogger(__name__)

#: A manifest file is never written larger than this.
MAX_WRITE_BYTES = 100_000
#: Larger files are refused before parsing (other writers may not cap their output).
MAX_READ_BYTES = 4 * 1024 * 1024
#: Deeper nesting is refused: no manifest field nests anywhere near this.
MAX_DEPTH = 64
#: Inline patch text kept when the file would exceed the cap (the digest covers the rest).
_TRUNCATION_NOTE = "\n[... truncated by expdna: {size} bytes in all, digest {digest}]\n"


#: A JSON \u escape of a UTF-16 surrogate (pairs decode fine; lone ones are found after).
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(f"duplicate key {quoted(key)}")
        result[key] = value
    return result


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite(text: str) -> float:
    """A JSON number as a float, refused where it overflows to infinity (``1e400``): the
    same value written ``Infinity`` is refused, so its overflowing spelling is too."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text} is out of range for a float (not finite)")
    return value


def _depth(value: Any, limit: int) -> int:
    """Nesting depth, iteratively (a recursive walk is what deep input attacks); only
    containers are visited, since a manifest is mostly leaves. A scalar is depth 0."""
    if type(value) is not dict and type(value) is not list:
        return 0
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return depth
        if depth > deepest:
            deepest = depth
        children = node.values() if type(node) is dict else node
        stack += [(v, depth + 1) for v in children if type(v) is dict or type(v) is list]
    return deepest


def parse_json(data: bytes, source: str) -> dict[str, Any]:
    """Strict JSON: UTF-8, no NaN/Infinity, no duplicate keys, bounded depth, an object."""
    if len(data) > MAX_READ_BYTES:
        raise ManifestError(
            source,
            f"{len(data) / 2**20:.1f} MiB is larger than the {MAX_READ_BYTES // 2**20} MiB "
            "limit for a manifest",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(source, f"not valid UTF-8 (byte {exc.start})") from None
    try:
        doc = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constants,
            parse_float=_finite,
        )
    except _DuplicateKey as exc:
        raise ManifestError(source, f"invalid JSON: {exc}") from None
    except RecursionError:
        raise ManifestError(source, f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise ManifestError(source, f"invalid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ManifestError(source, f"expected a JSON object, found {type(doc).__name__}")
    if _depth(doc, MAX_DEPTH) > MAX_DEPTH:
        raise ManifestError(source, f"nested deeper than {MAX_DEPTH} levels")
    # json.loads accepts an escaped lone surrogate ("\ud800") that no UTF-8 can hold: hashing,
    # the index and any writer would fail on it later. Only escapes can make one.
    if _ESCAPED_SURROGATE.search(text):
        where = _lone_surrogate(doc)
        if where is not None:
            shown = where.encode("utf-8", "backslashreplace").decode("utf-8")  # a key may hold it
            raise ManifestError(
                source, f"invalid JSON: lone surrogate in {shown} (not valid Unicode)"
            )
    return doc


def first_string_path(doc: dict[str, Any], bad: Callable[[str], bool]) -> str | None:
    """The dotted path of the first key or string of ``doc`` that is ``bad``, or None."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        path, node = stack.pop()
        items = node.items() if type(node) is dict else enumerate(node)
        for key, value in items:
            here = f"{path}.{key}" if path else str(key)
            if (type(key) is str and bad(key)) or (type(value) is str and bad(value)):
                return here
            if type(value) is dict or type(value) is list:
                stack.append((here, value))
    return None


def _lone_surrogate(doc: dict[str, Any]) -> str | None:
    return first_string_path(doc, lambda text: _SURROGATE.search(text) is not None)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "(document)"
    more = exc.error_count() - 1
    suffix = f" (and {more} more)" if more else ""
    # our own validators' words, without pydantic's "Value error, " before them
    said = err.get("ctx", {}).get("error") if err["type"] == "value_error" else None
    return f"invalid manifest: {where}: {said or err['msg']}{suffix}"


def manifest_from_dict(doc: dict[str, Any], source: str = "<manifest>") -> Manifest:
    """Validate a parsed document: version check, legacy names, the schema."""
    check_version(doc, source)
    try:
        return Manifest.model_validate(normalise_legacy(doc))
    except ValidationError as exc:
        raise ManifestError(source, _first_error(exc)) from None


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Read and validate a manifest file; :class:`ManifestError` says what is wrong."""
    source = os.fspath(path)
    try:
        # a FIFO or a device is refused before reading: a read there can block forever
        with open(open_regular(source), "rb") as fh:
            data = fh.read(MAX_READ_BYTES + 1)
    except NotRegularFileError as exc:
        if exc.kind == "a directory":
            raise ManifestError(source, "is a directory, not a manifest file") from None
        raise ManifestError(source, f"not a regular file ({exc.kind})") from None
    except FileNotFoundError:
        raise ManifestError(source, "no such file") from None
    except IsADirectoryError:
        raise ManifestError(source, "is a directory, not a manifest file") from None
    except OSError as exc:
        raise ManifestError(source, f"cannot read: {exc.strerror}") from None
    if len(data) > MAX_READ_BYTES:
        size = os.stat(source).st_size
        raise ManifestError(
            source,
            f"{size / 2**20:.1f} MiB is larger than the {MAX_READ_BYTES // 2**20} MiB "
            "limit for a manifest",
        )
    return manifest_from_dict(parse_json(data, source), source)


def serialise(doc: dict[str, Any]) -> bytes:
    """The file form: indented UTF-8 JSON of the normalised document.

    Non-finite floats and unsafe integers are written as the strings the DNA hashes, so the
    file holds only standard JSON and recomputes to the same DNA in any language.
    """
    text = json.dumps(normalise(doc), indent=2, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


def fit_to_cap(manifest: Manifest, cap: int = MAX_WRITE_BYTES) -> tuple[bytes, list[str]]:
    """The file bytes of ``manifest``, shrunk under ``cap``; and what was shrunk.

    Only text outside the DNA's identity projection is shortened (inline patch text first,
    then argv words of a DNA before version 3, collection warnings, metrics strings), so the
    stored DNA still
    recomputes from the file. Raises :class:`ManifestTooLargeError` when that is not enough.
    """
    doc = manifest.to_dict()
    data = serialise(doc)
    if len(data) <= cap:
        return data, []
    notes: list[str] = []
    for name, repo in doc.get("code", {}).items():
        patch = repo.get("patch") or {}
        if patch.get("text"):
            patch["text"] = None
            patch["truncated"] = True
            notes.append(f"code.{name}.patch.text")
    # Config file texts next: their digests stay, and a store keeps them as blobs.
    for path, record in ((doc.get("config") or {}).get("config_file_details") or {}).items():
        if isinstance(record, dict) and record.get("text"):
            record["text"] = None
            record["truncated"] = True
            notes.append(f"config.config_file_details.{path}.text")
    data = serialise(doc)
    # Give the room left back to the patches, largest first, so as much as fits stays inline.
    if len(data) <= cap:
        data = _refill_patches(manifest, doc, cap)
        return data, notes
    for path, holder, key in _free_text(doc):
        value = holder[key]
        if isinstance(value, str) and len(value) > 200:
            holder[key] = value[:100] + f"...[truncated by expdna: {len(value)} chars]"
            notes.append(path)
    data = serialise(doc)
    if len(data) > cap:
        raise ManifestTooLargeError(
            f"manifest is {len(data)} bytes even without inline patches and long free text; "
            f"the cap is {cap} bytes"
        )
    return data, notes


def _refill_patches(manifest: Manifest, doc: dict[str, Any], cap: int) -> bytes:
    data = serialise(doc)
    repos = sorted(manifest.code.items(), key=lambda kv: kv[1].patch.size if kv[1].patch else 0)
    for name, repo in repos:
        if repo.patch is None or not repo.patch.text:
            continue
        room = cap - len(data) - 200
        if room <= 0:
            break
        note = _TRUNCATION_NOTE.format(size=repo.patch.size, digest=repo.patch.digest)
        # json escapes can double a character's size: keep the cut conservative.
        text = repo.patch.text
        keep = text if len(serialise({"t": text})) <= room else text[: max(0, room // 2)] + note
        doc["code"][name]["patch"]["text"] = keep
        doc["code"][name]["patch"]["truncated"] = keep is not text
        candidate = serialise(doc)
        if len(candidate) > cap:
            doc["code"][name]["patch"]["text"] = None
            doc["code"][name]["patch"]["truncated"] = True
            candidate = serialise(doc)
        data = candidate
    return data


def _free_text(doc: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(path, container, key) of each string outside the identity sections."""
    found: list[tuple[str, Any, Any]] = []
    stored = doc.get("dna")
    version = stored.get("version") if isinstance(stored, dict) else None
    if isinstance(version, int) and version < 3:
        # Before DNA version 3 argv was outside the identity; since, it is the command's.
        argv = doc.get("command", {}).get("argv", [])
        found += [(f"command.argv.{i}", argv, i) for i in range(len(argv))]
    for name, status in doc.get("collection", {}).get("collectors", {}).items():
        warnings = status.get("warnings", [])
        found += [
            (f"collection.collectors.{name}.warnings.{i}", warnings, i)
            for i in range(len(warnings))
        ]
    metrics = doc.get("metrics", {})
    found += [(f"metrics.{k}", metrics, k) for k in metrics]
    return found


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never half."""
    directory = path.parent
    # os.replace onto a device node or FIFO would swap the node itself for this file
    check_output(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise WriteError(f"{path}: cannot write: {exc.strerror}") from None
    try:
        # mkstemp makes the file 0600; a manifest is meant to be shared like any file.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise WriteError(f"{path}: cannot write: {exc.strerror}") from None
        raise
    if os.name == "posix":
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _umask() -> int:
    """The process umask, read without changing it (``os.umask`` would, racily)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def write_manifest(manifest: Manifest, path: str | os.PathLike[str]) -> Path:
    """Write ``manifest`` atomically, under :data:`MAX_WRITE_BYTES`; returns the path."""
    target = Path(path)
    data, shrunk = fit_to_cap(manifest)
    if shrunk:
        log.warning(
            "manifest over %d bytes: shortened %s (digests kept)",
            MAX_WRITE_BYTES,
            ", ".join(shrunk),
        )
    write_atomic(target, data)
    return target
