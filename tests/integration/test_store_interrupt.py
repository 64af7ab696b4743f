"""Ctrl-C at any point of ``record --scan`` leaves the log invariant whole: every run in the
index is named by a log entry, and every applied entry's runs are in the index.

``record --scan`` is ``Store.scan``; it runs here in this process (the main thread, where
SIGINT lands) so that 50 interrupts at random points take seconds, not 50 process starts.
Small batches put batch boundaries, log entries and commits all through each scan. One
interrupt of the installed command closes the loop on the real process.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from expdna.manifest.io import write_manifest
from expdna.store import Store
from expdna.store.fsck import log_gaps
from tests.factories import EXPDNA, interruptible, synthetic

ROUNDS = 50
PER_ROUND = 6
BATCH = 2


def _interrupted(scan: Callable[[], None], delay: float) -> bool:
    """Run ``scan()`` with SIGINT sent to this process after ``delay`` seconds; whether it
    was interrupted. A signal that arrives after the scan is absorbed here."""
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    hit = False
    try:
        timer.start()
        scan()
        timer.cancel()
        time.sleep(0.002)
    except KeyboardInterrupt:
        hit = True
    while True:
        try:
            timer.join()
            time.sleep(0.002)  # a signal sent just before the join is raised here
            return hit
        except KeyboardInterrupt:
            hit = True


def _check(store: Path | Store) -> list[str]:
    if isinstance(store, Store):
        return log_gaps(store.reads, list(store.log.entries()))
    with Store.open_for_reading(store) as opened:
        return _check(opened)


@pytest.fixture
def python_sigint() -> Iterator[None]:
    """Python's own SIGINT handler (KeyboardInterrupt) for the test, whatever a library loaded
    earlier in this process installed (Ray Tune's swallows the signal)."""
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, saved)


@pytest.mark.usefixtures("python_sigint")
def test_ctrl_c_at_random_points_of_a_scan_keeps_the_log_invariant(tmp_path: Path) -> None:
    rng = random.Random(24)
    store = tmp_path / "store"
    runs = tmp_path / "runs"
    runs.mkdir()
    opened = Store.open(store)
    number = 0

    current = [runs]

    def next_files() -> None:  # each round scans its own new files, a small scan
        nonlocal number
        current[0] = runs / f"round_{number}"
        current[0].mkdir()
        for _ in range(PER_ROUND):
            write_manifest(synthetic(number), current[0] / f"manifest_{number}.json")
            number += 1

    def scan() -> None:
        for _ in opened.scan(current[0], batch_size=BATCH):
            pass

    spans = []
    for _ in range(3):  # how long one warm scan of PER_ROUND new files takes here
        next_files()
        began = time.perf_counter()
        scan()
        spans.append(time.perf_counter() - began)
    span = min(spans)
    interrupted = 0
    try:
        for _ in range(ROUNDS):
            next_files()
            interrupted += _interrupted(scan, rng.uniform(0, span))
            assert _check(opened) == []
    finally:
        opened.close()
    assert interrupted >= ROUNDS // 4, f"only {interrupted} of {ROUNDS} scans were interrupted"
    with Store.open(store) as final:
        list(final.scan(runs))  # what was left out is recorded now
        assert len(final.runs()) == number
    assert _check(store) == []


def test_ctrl_c_of_the_installed_record_scan(tmp_path: Path) -> None:
    store = tmp_path / "store"
    runs = tmp_path / "runs"
    runs.mkdir()
    for i in range(600):
        write_manifest(synthetic(i), runs / f"manifest_{i}.json")
    env = {**os.environ, "EXPDNA_STORE": str(store)}
    env.pop("EXPDNA_INDEX_URL", None)
    process = subprocess.Popen(
        [EXPDNA, "record", "--scan", "--quiet", str(runs)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    deadline = time.monotonic() + 60
    while not (store / "objects" / "log").is_dir() and time.monotonic() < deadline:
        time.sleep(0.01)  # recording has begun: its first log entry is being written
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode in (0, 130), stderr
    assert "Traceback" not in stderr
    assert _check(store) == []
