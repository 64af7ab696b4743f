"""Run one external command the way every collector should: argv list, timeout, no shell.

The child gets its own process group, so a timeout kills whatever it started too (a
shell-script wrapper, a pager, a helper) and nothing lingers holding our pipes. Children
still running when the interpreter exits (started by a collector the runner abandoned) are
killed at exit, so none outlives the process that started it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Completed:
    """What a finished command left behind."""

    returncode: int
    stdout: bytes
    stderr: bytes


class Runner(Protocol):
    """The signature of :func:`run`, so a collector can take a recorded replay instead."""

    def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float,
        input: bytes | None = None,
    ) -> Completed: ...


def run(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float,
    input: bytes | None = None,
    unset: Collection[str] = (),
) -> Completed:
    """Run ``argv`` and return its exit status and output; never raises on a non-zero exit.

    ``env`` is merged over ``os.environ`` when given; names in ``unset`` are not inherited
    from ``os.environ`` (``env`` may still set them). ``subprocess.TimeoutExpired`` is
    raised after ``timeout_s`` (the whole process group is killed first); ``OSError``
    (e.g. ``FileNotFoundError`` for a missing program) passes through.
    """
    full_env = None
    if env is not None or unset:
        inherited = {k: v for k, v in os.environ.items() if k not in unset}
        full_env = {**inherited, **(env or {})}
    with subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=full_env,
        stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as proc:
        with _running_lock:
            _running.add(proc)
        try:
            stdout, stderr = proc.communicate(input, timeout=max(timeout_s, 0.0))
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            with _running_lock:
                _running.discard(proc)
    return Completed(proc.returncode, stdout, stderr)


_running: set[subprocess.Popen[bytes]] = set()
_running_lock = threading.Lock()


@atexit.register
def _kill_running() -> None:
    with _running_lock:
        procs = list(_running)
    for proc in procs:
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # The child is not reaped yet, so its pid (= its process group id) is still ours.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()
