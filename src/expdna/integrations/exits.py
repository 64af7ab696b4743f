"""How the hook learns that the process is ending without ``finish``.

:func:`watch` registers a run that has started; when the process ends with the run still
open, it is finished as the process ended: an uncaught exception (seen by
``sys.excepthook``) makes it ``failed``, an uncaught ``KeyboardInterrupt`` or a SIGTERM
``interrupted``, a plain exit ``completed``. SIGKILL, the OOM killer and a lost node leave
nothing to run: the manifest keeps ``running`` (written when the run started).

The SIGTERM handler is installed only when the signal has its default action and this is
the main thread (a framework's own handler is left alone); it finishes the open runs, puts
the default action back and sends SIGTERM again, so the process still dies of it.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
import types
from typing import Any, Protocol

log = logging.getLogger(__name__)


class Ending(Protocol):
    """What :func:`watch` needs of a run: a way to end it."""

    def end(
        self, error: BaseException | None = None, *, signal_name: str | None = None
    ) -> object: ...


#: Open runs, each with the pid of the process that started it: a forked child (a
#: DataLoader worker) inherits the handlers and the list, and must not end its parent's run.
_open: list[tuple[Ending, int]] = []
_seen: dict[str, BaseException] = {}
_installed = False
#: A rank of a torch.distributed job ran here (see _collect_process_groups).
_distributed = False
_lock = threading.RLock()  # re-entrant: the SIGTERM handler may interrupt watch()


def watch(run: Ending) -> None:
    """End ``run`` with the process unless it is ended first (then :func:`forget` it)."""
    global _installed
    with _lock:
        if not any(r is run for r, _ in _open):  # identity: a handle compares by its fields
            _open.append((run, os.getpid()))
        if _installed:
            return
        _installed = True
    atexit.register(_at_exit)
    previous = sys.excepthook

    def excepthook(
        kind: type[BaseException], exc: BaseException, tb: types.TracebackType | None
    ) -> None:
        _seen["exception"] = exc
        previous(kind, exc, tb)

    sys.excepthook = excepthook
    _catch_sigterm()


def forget(run: Ending) -> None:
    with _lock:
        _open[:] = [(r, pid) for r, pid in _open if r is not run]


def _end_all(error: BaseException | None, signal_name: str | None) -> None:
    with _lock:
        runs = [run for run, pid in _open if pid == os.getpid()]
        _open.clear()
    for run in runs:
        try:
            run.end(error, signal_name=signal_name)
        except Exception as exc:  # the exit path must never raise
            log.warning("expdna: run not finished at exit: %s: %s", type(exc).__name__, exc)


def _at_exit() -> None:
    _end_all(_seen.get("exception"), None)
    # Ending a run may abandon a call at its deadline (a store that is slow to answer);
    # it must not be left inside native code as the interpreter finalises.
    from expdna.abandoned import wait_for_abandoned

    wait_for_abandoned()
    if _distributed:
        _collect_process_groups()


def in_distributed_job() -> None:
    """This process is a rank of a torch.distributed job: see :func:`_collect_process_groups`."""
    global _distributed
    _distributed = True


def _collect_process_groups() -> None:
    """Free a destroyed process group's last references while the interpreter still runs.

    A DDP model holds its process group in reference cycles, so after
    ``destroy_process_group()`` the group lives on until the interpreter's final garbage
    collection. Freeing it there, a gloo worker thread drops a pending work object that
    needs the GIL; CPython (3.11 to 3.13) ends such a thread with ``pthread_exit`` during
    finalisation, which torch's C++ turns into "terminate called without an active
    exception" and SIGABRT after the training succeeded (6 of 40 two-node torchrun jobs
    on a loaded machine without expdna at all; none of 40 with the hook and this). A
    collection now frees it while every thread can still take the GIL. A group still
    initialised is left alone: the framework destroys it later.
    """
    dist = getattr(sys.modules.get("torch"), "distributed", None)
    try:
        if dist is None or not dist.is_available() or dist.is_initialized():
            return
        import gc

        gc.collect()
    except Exception as exc:  # the exit path must never raise
        log.debug("process groups not collected: %s", exc)


def _catch_sigterm() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return
        signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError) as exc:  # an embedded interpreter without signals
        log.debug("SIGTERM not watched: %s", exc)


def _on_sigterm(number: int, frame: Any) -> None:
    _end_all(None, "SIGTERM")
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
