"""The environment of the interpreter a command names, when it is not this one.

``expdna generate -- /opt/venv2/bin/python train.py`` describes a run of another
interpreter: its Python version, its packages and its torch are what the run will use, not
expdna's own. That interpreter is found from the command (the interpreter word, resolved
through ``PATH`` when it has no ``/``; else the ``#!`` line of the program or launcher it
starts, as ``torchrun`` or an executable ``./train.py`` carry one) and, when it is another
environment than ``sys.executable``'s, asked to describe itself:
:mod:`expdna.collectors.probe_script` runs under it (an argv list, never a shell), within
the collector's deadline, with the command's environment variables, and its one line of
JSON is read as hostile input (bounded in size, every field checked).

"Another environment" follows how CPython finds its prefix: the same file as
``sys.executable`` in a directory with the same ``pyvenv.cfg`` (or none) is this
environment; a virtual environment's ``python`` is another one even though it is a
symlink to the same binary.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expdna.manifest.command_line import is_interpreter, parse_command

__all__ = [
    "ProbeFailed",
    "Probed",
    "command_interpreter",
    "foreign_interpreter",
    "probe",
    "read_report",
    "same_environment",
]

#: The most bytes of output read from a probe (a real report is a few KB per 100 packages).
OUTPUT_LIMIT = 4 * 1024 * 1024
#: The most distributions a report may list.
MAX_DISTRIBUTIONS = 50_000
_MAX_TEXT = 4096
_MAX_NAME = 256
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?[0-9A-Za-z.+-]{0,32}$")
#: The first bytes of a program read for its ``#!`` line (pip's sh trampoline included).
_SHEBANG_BYTES = 1024
_SH_TRAMPOLINE = re.compile(r"^'''exec' (?:'([^']+)'|(\S+)) ")
_PROBE_TEXT: str | None = None


class ProbeFailed(Exception):
    """The interpreter could not be found, run, or understood; the message says which."""


@dataclass(frozen=True)
class Probed:
    """What a probed interpreter says about itself, checked."""

    python_version: str
    python_implementation: str
    python_build: str
    python_executable: str
    #: name -> version as importlib lists them (first wins); None before Python 3.8.
    distributions: dict[str, str] | None
    hash_randomization: bool
    torch_version_py: str | None


def _probe_text() -> str:
    global _PROBE_TEXT
    if _PROBE_TEXT is None:
        _PROBE_TEXT = Path(__file__).with_name("probe_script.py").read_text(encoding="utf-8")
    return _PROBE_TEXT


def _resolve(word: str, cwd: Path, environ: Mapping[str, str]) -> Path | None:
    """``word`` as the command's ``exec`` finds it: a path when it has a ``/``, else the
    first executable of that name on the command's ``PATH``."""
    if not word or "\0" in word or len(word) > _MAX_TEXT:
        return None
    if "/" in word:
        path = Path(os.path.abspath(cwd / os.path.expanduser(word)))
        return path if path.is_file() else None
    found = shutil.which(word, path=environ.get("PATH", os.defpath))
    return Path(os.path.abspath(cwd / found)) if found else None


def _shebang(program: Path) -> list[str]:
    """The interpreter words of ``program``'s ``#!`` line (``[]`` when it has none)."""
    try:
        with program.open("rb") as handle:
            head = handle.read(_SHEBANG_BYTES)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    lines = head[2:].decode("utf-8", "replace").splitlines()
    words = lines[0].split() if lines else []
    if words and os.path.basename(words[0]) == "sh" and len(lines) > 1:
        # pip writes ``#!/bin/sh`` and an ``exec`` line when the interpreter's path is long.
        match = _SH_TRAMPOLINE.match(lines[1])
        if match is not None:
            return [match.group(1) or match.group(2)]
    if words and os.path.basename(words[0]) == "env":
        words = [word for word in words[1:] if not word.startswith("-")]
    return words[:1]


def command_interpreter(
    argv: tuple[str, ...] | list[str], cwd: Path, environ: Mapping[str, str]
) -> Path | None:
    """The Python interpreter ``argv`` runs its program with, as a path; None when the
    command names none (a shell script, a binary) or it cannot be found.

    Raises :class:`ProbeFailed` when the command names an interpreter that does not exist.
    """
    if not argv:
        return None
    shape = parse_command(argv)
    if shape.interpreter is not None:
        found = _resolve(shape.interpreter, cwd, environ)
        if found is None:
            raise ProbeFailed(f"the command's interpreter {shape.interpreter!r} was not found")
        return found
    program = _resolve(str(argv[0]), cwd, environ)
    if program is None:
        return None
    words = _shebang(program)
    if not words or not is_interpreter(words[0]):
        return None
    return _resolve(words[0], program.parent, environ)


def _venv_config(executable: Path) -> Path | None:
    """The ``pyvenv.cfg`` CPython reads for an interpreter started as ``executable``."""
    for folder in (executable.parent, executable.parent.parent):
        candidate = folder / "pyvenv.cfg"
        if candidate.is_file():
            return candidate
    return None


def same_environment(executable: Path, ours: str | None = None) -> bool:
    """Whether ``executable`` starts the environment ``ours`` (default ``sys.executable``)."""
    mine = Path(os.path.abspath(ours if ours is not None else sys.executable))
    if executable == mine:
        return True
    try:
        if not os.path.samefile(executable, mine):
            return False
    except OSError:
        return False
    return _venv_config(executable) == _venv_config(mine)


def foreign_interpreter(
    argv: tuple[str, ...] | list[str], cwd: Path, environ: Mapping[str, str]
) -> Path | None:
    """The command's interpreter when it is another environment than this process's."""
    found = command_interpreter(argv, cwd, environ)
    if found is None or same_environment(found):
        return None
    return found


def _read_bounded(process: subprocess.Popen[bytes], timeout_s: float) -> bytes:
    """The process's stdout, at most :data:`OUTPUT_LIMIT` bytes, within ``timeout_s``."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    chunks: list[bytes] = []
    size = 0
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ProbeFailed(f"gave no answer within {timeout_s:.3g} s")
            if not selector.select(left):
                continue
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                break
            size += len(chunk)
            if size > OUTPUT_LIMIT:
                raise ProbeFailed(f"wrote more than {OUTPUT_LIMIT} bytes")
            chunks.append(chunk)
    left = max(deadline - time.monotonic(), 0.01)
    try:
        code = process.wait(timeout=left)
    except subprocess.TimeoutExpired:
        raise ProbeFailed(f"did not exit within {timeout_s:.3g} s") from None
    if code != 0:
        raise ProbeFailed(f"exited with status {code}")
    return b"".join(chunks)


def probe(executable: Path, *, cwd: Path, environ: Mapping[str, str], timeout_s: float) -> Probed:
    """Run the probe under ``executable`` and return its checked report.

    Raises :class:`ProbeFailed` naming what went wrong (not found, not runnable, no answer
    in time, a non-zero exit, output that is not a probe report).
    """
    argv = [str(executable), "-c", _probe_text()]
    try:
        process = subprocess.Popen(
            argv,
            cwd=cwd if cwd.is_dir() else None,
            env=dict(environ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # so a timeout ends whatever it started, too
        )
    except OSError as exc:
        raise ProbeFailed(f"could not be started: {exc.strerror or exc}") from None
    try:
        raw = _read_bounded(process, timeout_s)
    finally:
        if process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        assert process.stdout is not None
        process.stdout.close()
    return read_report(raw)


def _text(report: Mapping[str, Any], key: str, limit: int = _MAX_TEXT) -> str:
    value = report.get(key)
    if not isinstance(value, str) or len(value) > limit or "\0" in value:
        raise ProbeFailed(f"answered without a valid {key}")
    return value


def _distributions(value: object) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_DISTRIBUTIONS:
        raise ProbeFailed("answered with an invalid distribution list")
    from expdna.collectors.distributions import normalize

    found: dict[str, str] = {}
    for item in value:
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not all(isinstance(part, str) and 0 < len(part) <= _MAX_NAME for part in item)
        ):
            raise ProbeFailed("answered with an invalid distribution list")
        found.setdefault(normalize(item[0]), item[1])
    return found


def read_report(raw: bytes) -> Probed:
    """A probe's output, checked field by field (it came from a program we do not trust)."""
    import json

    try:
        report = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ProbeFailed("answered with output that is not JSON") from None
    if not isinstance(report, dict) or report.get("probe") != 1:
        raise ProbeFailed("answered with output that is not a probe report")
    version = _text(report, "python_version", 64)
    if not _VERSION.match(version):
        raise ProbeFailed(f"answered with an invalid python_version {version[:40]!r}")
    version_py = report.get("torch_version_py")
    if version_py is not None and (not isinstance(version_py, str) or len(version_py) > 65536):
        raise ProbeFailed("answered with an invalid torch_version_py")
    randomization = report.get("hash_randomization")
    if not isinstance(randomization, bool):
        raise ProbeFailed("answered without a valid hash_randomization")
    return Probed(
        python_version=version,
        python_implementation=_text(report, "python_implementation", 64),
        python_build=_text(report, "python_build", 256),
        python_executable=_text(report, "python_executable"),
        distributions=_distributions(report.get("distributions")),
        hash_randomization=randomization,
        torch_version_py=version_py,
    )
