"""Ctrl-C held back over a store write whose parts must go together."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def interrupt_deferred() -> Iterator[None]:
    """Ctrl-C (SIGINT) inside is raised when the block ends, not in its middle.

    A batch's log entry, blobs and index transaction go together: an interrupt between a
    commit and the code that knows it committed would withdraw the log entry of committed
    rows (runs no log names, adopted by ``reindex`` with file times). Deferring it costs
    at most one batch's time. Only the main thread receives signals; elsewhere, and where a
    caller installed its own SIGINT handler, nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:
        yield
        return
    caught: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt
