"""A second opinion: detect-secrets over every manifest and store object the tests produce.

At the end of the session every ``*.json`` file and every store object (``objects/ab/…``)
under pytest's temporary directory is scanned with detect-secrets' own plugins; a finding
that is not on the reviewed allow-list below fails the session, naming file and line.
Git's own object directories are skipped (zlib data, not ours).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# Reviewed findings that are not secrets: (detect-secrets type, value pattern, why).
ALLOWED: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "Hex High Entropy String",
        re.compile(r"(?:blake3:|sha256:)?(?:[0-9a-f]{40}|[0-9a-f]{64})"),
        "commits, BLAKE3/SHA-256 digests and DNAs: 40 or 64 hex, the manifest's own identity",
    ),
    (
        "Secret Keyword",
        re.compile(r"[^*\s]{0,64}\*\*\*|<[\w-]+>|"),
        "a value redaction already replaced (`abcd***`, `sk-proj-***`, `<internal-address>`)",
    ),
)
_SKIP_DIRS = {".git", "__pycache__", ".venv"}
_MAX_BYTES = 4 << 20


@dataclass(frozen=True)
class Finding:
    path: Path
    line: int
    kind: str
    value: str | None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {self.value!r}"


def produced_files(root: Path) -> Iterator[Path]:
    """Manifests (any JSON) and store objects under ``root``."""
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
        here = Path(top)
        is_object_dir = here.parent.name == "objects" and len(here.name) == 2
        for name in files:
            if name.endswith(".json") or is_object_dir:
                yield here / name


def _allowed(kind: str, value: str | None) -> bool:
    return any(
        kind == allowed_kind and value is not None and pattern.fullmatch(value)
        for allowed_kind, pattern, _why in ALLOWED
    )


def scan(paths: Iterable[Path]) -> list[Finding]:
    """detect-secrets' findings in ``paths`` that the allow-list does not cover."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    found = []
    with default_settings():
        for path in paths:
            try:
                if path.stat().st_size > _MAX_BYTES:
                    continue
                path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # binary objects (checkpoint bytes) are not text to scan
            collection = SecretsCollection()
            collection.scan_file(str(path))
            for _name, secret in collection:
                kind, value = secret.type, secret.secret_value
                if not _allowed(kind, value):
                    found.append(Finding(path, secret.line_number, kind, value))
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None or os.environ.get("EXPDNA_SKIP_SECRET_SCAN") == "1":
        return
    try:
        root = factory.getbasetemp()
    except (OSError, ValueError):
        return
    findings = scan(produced_files(root))
    if findings:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = ["detect-secrets found secrets in what the tests wrote:", *map(str, findings)]
        if reporter is not None:
            reporter.write_line("\n".join(lines), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
