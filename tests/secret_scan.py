"""A second opinion: detect-secrets over every manifest and store object the tests produce.

At the end of the session every ``*.json`` file and every store object (``objects/ab/…``)
under pytest's temporary directory is scanned with detect-secrets' own plugins; a finding
that is not on the reviewed allow-list below fails the session, naming file and line.
Git's own object directories are skipped (zlib data, not ours).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
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
    *(
        (
            kind,
            re.compile(
                r"--(?:node-ip-address|node-manager-port|object-store-name|raylet-name|"
                r"redis-address|metrics-agent-port|runtime-env-agent-port|gcs-address|"
                r"session-name|temp-dir|webui|cluster-id|worker-id|worker-launch-time-ms|"
                r"node-id|runtime-env-hash|logging-rotate-bytes|logging-rotate-backup-count)"
                r"=[\w./:-]*"
            ),
            "a Ray worker's own argv (a Tune trial's command.argv): session paths and ids",
        )
        for kind in ("Base64 High Entropy String", "Hex High Entropy String")
    ),
    (
        "Secret Keyword",
        re.compile(r"[^*\s]{0,64}\*\*\*|<[\w-]+>|"),
        "a value redaction already replaced (`abcd***`, `sk-proj-***`, `<internal-address>`)",
    ),
)
_SKIP_DIRS = {".git", "__pycache__", ".venv"}
_MAX_BYTES = 4 << 20
_MAX_PIECE = 4096
_DIGEST = re.compile(r"(?<![0-9a-fA-F])(?:[0-9a-f]{64}|[0-9a-f]{40})(?![0-9a-fA-F])")
# a JSON-escaped newline, or the start of a JSON member after `{`, `[` or `,`
_PIECES = re.compile(r'\\n|(?<=[,{\[])(?=")')
_BREAKS = re.compile(r"[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


@dataclass(frozen=True)
class Finding:
    path: Path
    line: int
    kind: str
    value: str | None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {self.value!r}"


def produced_files(root: Path) -> Iterator[Path]:
    """Manifests (any JSON) and store objects under ``root``: regular files only (tests
    leave FIFOs and links to devices about), each distinct content once."""
    seen: set[bytes] = set()
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
        here = Path(top)
        is_object_dir = here.parent.name == "objects" and len(here.name) == 2
        for name in files:
            if not (name.endswith(".json") or is_object_dir):
                continue
            path = here / name
            try:
                st = path.lstat()
                if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_BYTES:
                    continue
                digest = hashlib.blake2b(path.read_bytes(), digest_size=16).digest()
            except OSError:
                continue
            if digest not in seen:
                seen.add(digest)
                yield path


def _allowed(kind: str, value: str | None) -> bool:
    return any(
        kind == allowed_kind and value is not None and pattern.fullmatch(value)
        for allowed_kind, pattern, _why in ALLOWED
    )


def scan(paths: Iterable[Path]) -> list[Finding]:
    """detect-secrets' findings in ``paths`` that the allow-list does not cover.

    The files are cut into pieces first: lines, JSON members (``"key": value``) and the
    lines of a patch inside a JSON string, each distinct piece scanned once, 40- and
    64-hex digests blanked (allowed anyway). The test run's thousands of manifests repeat
    almost every piece, so this takes seconds where file by file takes a minute.
    """
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    pieces: dict[str, tuple[Path, int]] = {}
    for path in paths:
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # binary objects (checkpoint bytes) are not text to scan
        text = _DIGEST.sub("0", text)
        for number, line in enumerate(text.split("\n"), 1):
            for piece in _PIECES.split(line):
                key = _BREAKS.sub(" ", piece.strip()[:_MAX_PIECE])
                pieces.setdefault(key, (path, number))
    keys = list(pieces)
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "pieces.json"
        target.write_text("\n".join(keys), encoding="utf-8")
        with default_settings():
            collection = SecretsCollection()
            collection.scan_file(str(target))
    found = []
    for _name, secret in collection:
        kind, value = secret.type, secret.secret_value
        if not _allowed(kind, value):
            path, number = pieces[keys[secret.line_number - 1]]
            found.append(Finding(path, number, kind, value))
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
