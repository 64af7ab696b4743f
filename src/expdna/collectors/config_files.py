"""Config files the run reads: found in argv, digested by their redacted text, parsed safely.

Which files (:func:`find_config_files`):

- every argv word, positional or option value (``--config x.yaml``, ``--config=x.yaml``,
  ``-c x.yaml``), that names an existing file ending in ``.yaml``, ``.yml``, ``.json``,
  ``.toml``, ``.ini`` or ``.cfg``, unless it is larger than :data:`READ_MAX` (data, such as
  ``--train_file train.json``), the value of a per-run argument (``--log-file x.json``), or
  under the run's output directory;
- ``.py`` files given as positional arguments after the entry script (nanoGPT's
  ``python train.py config/train_gpt2.py``); the entry script itself is code, not config;
- the value of a well-known flag whatever its extension: ``--config``, ``--config-file``,
  ``--cfg``, ``--deepspeed``, ``--hparams`` (see :data:`CONFIG_FLAGS`);
- a Hydra app's primary config and every file its defaults lists and command-line group
  choices compose (:mod:`expdna.collectors.hydra_compose`), wherever they are;
- Hydra's composed configuration, ``.hydra/config.yaml``, in the run's output directory
  (``start(output_dir=...)``, the working directory, or the output directory of a Hydra
  app running in this process), with its overrides.

Each file is opened only when it is a regular file, read up to :data:`READ_MAX` bytes and
never executed. Its text is redacted (:func:`expdna.manifest.redact.redact_text`) before
anything else, so the digest (``config.config_files``, part of the DNA) and the stored blob
never hold a secret. Files up to :data:`TEXT_MAX` bytes keep their redacted text (inline in
the manifest file, a blob in the store) and are parsed with safe loaders only
(``yaml.safe_load``, ``json``, ``tomllib``, ``configparser``, and for ``.py`` a tokenizer
that reads literal assignments); larger ones are recorded by digest, ``truncated: true``.
A file that cannot be read (permissions, vanished, not a regular file, binary, over
:data:`READ_MAX`) is recorded with the reason and makes the config section unknown.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, NamedTuple

from expdna.collectors.config_find import (
    READ_MAX,
    Candidate,
    find_config_files,
    hydra_runtime,
    suffix_format,
)
from expdna.collectors.config_parse import (
    NO_PYYAML,
    jsonable,
    parse_text,
    python_values,
    resolve_hydra,
    sniff,
)
from expdna.collectors.context import CollectContext, NotAvailable, Partial, Unknown
from expdna.digest import ref_of
from expdna.regular import NotRegularFileError, open_regular

__all__ = ["TEXT_MAX", "collect_config_files", "parsed_config_values"]

log = logging.getLogger(__name__)

#: Redacted text kept (inline, and as a blob in the store) and parsed up to this size.
TEXT_MAX = 256 * 1024
#: Parsed values kept per run, as JSON characters (the manifest file is capped at 100 KB).
VALUES_MAX_CHARS = 32_000


class _Unreadable(Exception):
    """The file cannot be recorded; the message is the reason."""


# --- reading -------------------------------------------------------------------------------


def _read(path: Path, deadline: float) -> bytes:
    """The bytes of a regular file of at most :data:`READ_MAX` bytes, or :class:`_Unreadable`."""
    try:
        fd = open_regular(str(path))
    except NotRegularFileError as exc:
        raise _Unreadable(f"not a regular file ({exc.kind})") from None
    except FileNotFoundError:
        raise _Unreadable("vanished before it could be read") from None
    except OSError as exc:
        raise _Unreadable(f"unreadable: {exc.strerror or exc}") from None
    try:
        size = os.fstat(fd).st_size
        if size > READ_MAX:
            raise _Unreadable(f"too large for a config file ({size} bytes > {READ_MAX})")
        chunks: list[bytes] = []
        total = 0
        while True:
            if time.monotonic() > deadline:
                raise _Unreadable("not read before the collector's deadline")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            total += len(chunk)
            if total > READ_MAX:  # grew while being read
                raise _Unreadable(f"too large for a config file (over {READ_MAX} bytes)")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise _Unreadable(f"unreadable: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _decode(data: bytes) -> str:
    if b"\0" in data[:8192]:
        raise _Unreadable("binary (holds NUL bytes), not a config file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _Unreadable(f"not UTF-8 text (byte {exc.start})") from None


# --- recording -----------------------------------------------------------------------------


def _labels(candidates: list[Candidate]) -> dict[Path, str]:
    """A short unique name per file: its name, with parent folders only where two clash
    (a Hydra config's with its group's folders: ``trainer/cpu.yaml``)."""
    paths = [c.path for c in candidates]
    depth = {
        c.path: min((c.hydra_config or "").count("/") + 1, len(c.path.parts)) for c in candidates
    }
    while True:
        labels = {p: "/".join(p.parts[-depth[p] :]) for p in paths}
        clashes = [p for p in paths if list(labels.values()).count(labels[p]) > 1]
        grown = [p for p in clashes if depth[p] < len(p.parts)]
        if not grown:
            return labels
        for p in grown:
            depth[p] += 1


def _record(candidate: Candidate, deadline: float) -> tuple[dict[str, Any], Any, str | None]:
    """(the file's details, its parsed values or None, why it is unknown or None)."""
    from expdna.manifest.redact import redact_text

    path = candidate.path
    fmt = suffix_format(path.name)
    details: dict[str, Any] = {"source": candidate.source, "format": fmt}
    if candidate.hydra_config is not None:
        details["hydra_config"] = candidate.hydra_config
    if candidate.hydra_group is not None:
        details["hydra_group"] = candidate.hydra_group
    try:
        data = _read(path, deadline)
        text = _decode(data)
    except _Unreadable as exc:
        details["unknown"] = str(exc)
        return details, None, f"config file {path}: {exc}"
    redacted = redact_text(text)
    encoded = redacted.encode("utf-8")
    details.update(size=len(data), digest=ref_of(encoded), truncated=len(encoded) > TEXT_MAX)
    if details["truncated"]:
        details["parse_error"] = f"not parsed: over {TEXT_MAX} bytes"
        return details, None, None
    details["text"] = redacted
    fmt = fmt if fmt is not None else sniff(text)
    details["format"] = fmt
    skipped: list[str] = []
    try:
        if fmt == "python":
            values, skipped = python_values(text)
        else:
            values = parse_text(text, fmt)
        note = None
        if candidate.source == "hydra":
            values, note = resolve_hydra(values, text)
        values = jsonable(values)
        if note:
            details["parse_error"] = note
    except ValueError as exc:
        details["parse_error"] = str(exc)[:500]
        return details, None, None
    if skipped:
        details["not_literal"] = skipped
    seedless = seedless_digest(values)
    if seedless is not None:
        details["seedless_digest"] = seedless
    return details, values, None


def _without_seed_keys(value: Any) -> tuple[Any, bool]:
    """``value`` with every seed-named key removed at any depth, and whether any was."""
    from expdna.manifest.family import is_seed_arg

    if isinstance(value, dict):
        found = False
        kept: dict[str, Any] = {}
        for key, item in value.items():
            if is_seed_arg(str(key)):
                found = True
                continue
            kept[key], inner = _without_seed_keys(item)
            found = found or inner
        return kept, found
    if isinstance(value, list):
        items = [_without_seed_keys(item) for item in value]
        return [item for item, _ in items], any(inner for _, inner in items)
    return value, False


def seedless_digest(values: Any) -> str | None:
    """The digest of a config file's parsed values without their seed keys (``seed``,
    ``random_seed``, ``*_seed`` at any depth), which the family digest counts the file by;
    None when it holds no seed key (its text digest stands)."""
    from expdna.manifest.canonical import canonical_bytes

    kept, found = _without_seed_keys(values)
    return ref_of(canonical_bytes(kept)) if found else None


class ConfigValues(NamedTuple):
    #: The parsed values of each config file, in argv order.
    values: list[Any]
    #: The arguments whose value names a config file (``config``, Hydra's ``cp``): a path,
    #: never a training value (``-cp /shared/configs`` is not context parallelism).
    file_args: frozenset[str]


def parsed_config_values(ctx: CollectContext) -> ConfigValues:
    """The parsed values of each config file the run reads, in argv order, and the
    arguments naming them (for the training collector; unreadable and unparsed files are
    left out)."""
    deadline = time.monotonic() + ctx.timeout_s
    values = []
    try:
        candidates = find_config_files(ctx)
    except Exception as exc:  # training fields from argv must not depend on this
        log.debug("config files not found: %s", exc)
        return ConfigValues([], frozenset())
    for candidate in candidates:
        try:
            _, parsed, _ = _record(candidate, deadline)
        except Exception as exc:  # the config_files collector reports it
            log.debug("config file %s: %s", candidate.path, exc)
            continue
        if parsed is not None:
            values.append(parsed)
    return ConfigValues(values, frozenset(c.arg for c in candidates if c.arg is not None))


def collect_config_files(ctx: CollectContext) -> dict[str, Any]:
    from expdna.manifest.redact import redact_text

    deadline = time.monotonic() + ctx.timeout_s
    warnings: list[str] = []
    candidates = find_config_files(ctx, warnings)
    runtime = hydra_runtime()
    if not candidates and runtime is None:
        raise NotAvailable("; ".join(warnings) or "no config files in argv")
    labels = _labels(candidates)
    args = sorted({c.arg for c in candidates if c.arg is not None})
    files: dict[str, str] = {}
    details: dict[str, Any] = {}
    values: dict[str, Any] = {}
    unknown: list[str] = []
    room = VALUES_MAX_CHARS
    hydra: dict[str, Any] = {}
    for candidate in candidates:
        key = redact_text(str(candidate.path))
        record, parsed, why = _record(candidate, deadline)
        record["name"] = labels[candidate.path]
        details[key] = record
        if why is not None:
            unknown.append(why)
            continue
        files[key] = record["digest"]
        if parsed is not None:
            size = len(json.dumps(parsed, default=str))
            if size > room:
                record["values_omitted"] = f"{size} characters of values; room for {room}"
            else:
                room -= size
                values[record["name"]] = parsed
        if candidate.source == "hydra" and "overrides" not in hydra:
            overrides = _saved_overrides(candidate.path.parent / "overrides.yaml", deadline)
            if overrides is not None:
                hydra["overrides"] = overrides
    if runtime is not None:
        hydra.update(config_name=runtime["config_name"], overrides=runtime["overrides"])
    section: dict[str, Any] = {"config_files": files, "config_file_details": details}
    if args:
        section["config_file_args"] = args
    if values:
        section["config_values"] = values
    if hydra:
        section["hydra"] = hydra
    # Values silently missing would look like a file without keys: say why, and the fix.
    no_yaml = sum(d.get("parse_error") == NO_PYYAML for d in details.values())
    hint = (
        [
            f"PyYAML is not installed: {no_yaml} YAML config file(s) without values "
            "(pip install 'expdna[yaml]')"
        ]
        if no_yaml
        else []
    )
    if unknown:
        raise Unknown(section, "; ".join(unknown + hint + warnings))
    if hint or warnings:
        raise Partial(section, "; ".join(hint + warnings))
    return section


def _saved_overrides(path: Path, deadline: float) -> list[str] | None:
    """Hydra's ``.hydra/overrides.yaml``: the command-line overrides of the run."""
    try:
        listed = parse_text(_decode(_read(path, deadline)), "yaml")
    except (_Unreadable, ValueError):
        return None
    return [str(o) for o in listed] if isinstance(listed, list) else None
