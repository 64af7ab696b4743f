"""The run's inputs on this machine: its config files and datasets, by digest.

A config file is found again by its path relative to its repository when it was inside
one (the checkout may sit elsewhere here), else at its recorded path, then read, redacted
and digested exactly as the collector does (its digest is in the DNA). A changed file is
FAIL naming the file and, where both texts parse, the first keys whose values differ.
Datasets are re-digested through the stat-keyed digest cache (a quick pass over files
whose size and mtime are unchanged); a changed or missing one is FAIL naming its files.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from expdna.compare.findings import ABSENT, Finding
from expdna.compare.repos import match_repos
from expdna.manifest.model import Manifest

#: Changed keys or files named in one finding; the rest are counted.
SHOWN = 3
#: Reading config files again is bounded like the collector's pass.
CONFIG_DEADLINE_S = 30.0
_SUFFIX = re.compile(r"-\d+$")


def _more(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    return shown + (f" (and {len(names) - SHOWN} more)" if len(names) > SHOWN else "")


def _home(recorded: str) -> str | None:
    """The recorded path with the recording user's home as ours; None where redaction
    left it unusable."""
    if recorded == "~" or recorded.startswith("~/"):
        return str(Path.home()) + recorded[1:]
    if "<HOME>" in recorded or "<internal" in recorded or "***" in recorded:
        return None
    return recorded


def config_candidates(
    recorded_path: str, manifest: Manifest, current: Manifest, tops: Mapping[str, Path]
) -> list[Path]:
    """Where a recorded config file may be now, best first."""
    found: list[Path] = []
    parts = Path(recorded_path).parts
    for name, live in match_repos(manifest.code, current.code).items():
        top = tops.get(live)
        if top is None:
            continue
        names = {name, _SUFFIX.sub("", name)}
        for i in range(len(parts) - 2, -1, -1):  # the innermost folder of that name first
            if parts[i] in names:
                found.append(top.joinpath(*parts[i + 1 :]))
    mine = _home(recorded_path)
    if mine is not None:
        found.append(Path(mine))
    return list(dict.fromkeys(found))


def _parsed(text: str | None, fmt: str | None) -> Any:
    from expdna.collectors.config_parse import parse_text, python_values, sniff

    if text is None:
        return None
    try:
        kind = fmt or sniff(text)
        return python_values(text)[0] if kind == "python" else parse_text(text, kind)
    except ValueError:
        return None


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping) and value:
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flat(inner, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


def changed_keys(old: Any, new: Any) -> list[str]:
    """Dotted keys whose values differ, in the recorded file's order, added keys last."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return []
    a, b = _flat(old), _flat(new)
    changed = [key for key in a if b.get(key, ABSENT) != a[key]]
    return changed + [key for key in b if key not in a]


def config_findings(
    recorded: Manifest, current: Manifest, tops: Mapping[str, Path]
) -> Iterator[Finding]:
    """One finding per recorded config file: found and equal, changed, or missing."""
    from expdna.collectors.config_files import _record
    from expdna.collectors.config_find import Candidate

    details = recorded.config.config_file_details or {}
    deadline = time.monotonic() + CONFIG_DEADLINE_S
    for path, digest in recorded.config.config_files.items():
        field = f"config.config_files.{path}"
        where = next(
            (p for p in config_candidates(path, recorded, current, tops) if os.path.isfile(p)),
            None,
        )
        if where is None:
            yield Finding(field, "FAIL", digest, ABSENT, "config file not found here")
            continue
        # The collector's own reading: the same bytes cap, decoding and redaction.
        now, _, why = _record(Candidate(where, "check"), deadline)
        if why is not None:
            yield Finding(field, "FAIL", digest, None, f"{where}: {now.get('unknown')}")
            continue
        if now["digest"] == digest:
            yield Finding(field, "PASS", digest, now["digest"], f"at {where}")
            continue
        old = details.get(path)
        fmt = old.format if old is not None else None
        keys = changed_keys(
            _parsed(old.text if old is not None else None, fmt), _parsed(now.get("text"), fmt)
        )
        note = f"changed at {where}" + (f"; changed keys: {_more(keys)}" if keys else "")
        yield Finding(field, "FAIL", digest, now["digest"], note)


def data_findings(recorded: Manifest) -> Iterator[Finding]:
    """One finding per recorded dataset, re-digested through the digest cache."""
    from expdna.compare.data import verify_data

    datasets = recorded.to_dict()["data"]["datasets"]
    if not datasets:
        return
    for check in verify_data(datasets).datasets:
        field = f"data.{check.root}"
        old = check.recorded.get("digest")
        new = check.current.get("digest") if check.current else None
        if check.status == "ok":
            yield Finding(field, "PASS", old, new)
        elif check.status == "missing":
            yield Finding(field, "FAIL", old, ABSENT, check.note)
        elif check.status == "unverifiable":
            yield Finding(field, "WARN", old, new, check.note)
        else:
            named = [
                *(f"changed {f}" for f in check.changed),
                *(f"missing {f}" for f in check.missing),
                *(f"new {f}" for f in check.new),
            ]
            yield Finding(field, "FAIL", old, new, _more(named) if named else check.note)
