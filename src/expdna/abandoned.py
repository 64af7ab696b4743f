"""Threads given up on at a deadline, waited for once more as the interpreter exits.

A collector or a store call that misses its deadline is abandoned in a daemon thread, so a
hang never holds up training. But a daemon thread still inside native code when the
interpreter finalises is ended by CPython (3.11 to 3.13) with ``pthread_exit`` as it comes
back, and a C++ frame of torch's on its stack turns that into ``std::terminate``: the
process prints "terminate called without an active exception" and dies of SIGABRT after
the training itself succeeded. So each abandoned thread is waited for, at most
:data:`EXIT_WAIT_S` in all, by an ``atexit`` handler: one that was merely slow ends there;
one truly hung (a stalled mount) never comes back from native code, and harms nothing.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time

log = logging.getLogger(__name__)

#: The longest the process's exit waits for every abandoned thread together.
EXIT_WAIT_S = 10.0

_threads: list[threading.Thread] = []
# Re-entrant: a SIGTERM handler that ends a run may abandon a call while this thread is
# inside abandon() (expdna.integrations.exits).
_lock = threading.RLock()
_registered = False


def abandon(thread: threading.Thread) -> None:
    """Leave ``thread`` running, and wait for it at exit (see the module doc)."""
    global _registered
    with _lock:
        _threads[:] = [t for t in _threads if t.is_alive()]
        _threads.append(thread)
        if _registered:
            return
        _registered = True
    # Registered late, so it runs before handlers registered earlier (atexit is LIFO),
    # such as a framework's destroy_process_group the thread may still be using. The
    # hook's own exit handler (which may abandon calls as it ends a run) calls
    # wait_for_abandoned itself when it is done.
    atexit.register(wait_for_abandoned)


def wait_for_abandoned(limit_s: float = EXIT_WAIT_S) -> list[str]:
    """Join the abandoned threads, ``limit_s`` in all, including any abandoned while
    waiting; the names of those still running."""
    ends = time.monotonic() + limit_s
    waited: list[threading.Thread] = []
    while True:
        with _lock:
            new = [t for t in _threads if not any(t is w for w in waited)]
        if not new:
            break
        for thread in new:
            thread.join(max(0.0, ends - time.monotonic()))
        waited += new
        if time.monotonic() >= ends:
            break
    left = [t.name for t in waited if t.is_alive()]
    if left:
        log.debug("still running at exit: %s", ", ".join(left))
    return left
