"""The status section's rules: how an exception, a signal and age read as a state."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

from expdna.integrations import exits
from expdna.manifest.model import Manifest
from expdna.manifest.status import (
    ended,
    error_of,
    from_exception,
    shown_state,
    started,
    unfinished_after_s,
)
from tests.factories import manifest_of, synthetic_doc

T0 = datetime(2026, 12, 1, 21, 0, tzinfo=timezone.utc)


def test_an_exception_a_signal_and_an_exit_each_read_as_their_state() -> None:
    assert from_exception(None) == ("completed", None, None)
    assert from_exception(KeyboardInterrupt()) == ("interrupted", None, "SIGINT")
    assert from_exception(SystemExit(0)) == ("completed", None, None)
    assert from_exception(SystemExit(3)) == (
        "failed",
        {"type": "SystemExit", "message": "3"},
        None,
    )
    state, error, _ = from_exception(RuntimeError("token=hf_" + "x" * 34))
    assert state == "failed" and error is not None and "x" * 34 not in error["message"]
    assert len(error_of(ValueError("a" * 5000))["message"]) < 2100


def test_ended_keeps_the_start_and_measures_the_duration() -> None:
    begun = started(T0)
    assert begun.state == "running" and begun.started_at == "2026-12-01T21:00:00Z"
    done = ended(begun, "failed", exit_code=3, now=T0 + timedelta(seconds=90.5))
    assert (done.started_at, done.ended_at) == (
        "2026-12-01T21:00:00Z",
        "2026-12-01T21:01:30.500000Z",
    )
    assert done.duration_s == 90.5 and done.exit_code == 3 and done.host == begun.host


def test_a_run_still_running_past_the_limit_shows_unfinished() -> None:
    later = T0 + timedelta(hours=25)
    assert shown_state(None, T0, now=later) == "unknown"
    assert shown_state("failed", T0, now=later) == "failed"
    assert shown_state("running", T0, now=T0 + timedelta(hours=1)) == "running"
    assert shown_state("running", T0, now=later) == "unfinished"
    assert shown_state("running", T0.replace(tzinfo=None), now=later, after_s=3600) == "unfinished"
    assert unfinished_after_s({"EXPDNA_UNFINISHED_AFTER": "60"}) == 60.0
    assert unfinished_after_s({"EXPDNA_UNFINISHED_AFTER": "soon"}) == 24 * 3600.0
    assert unfinished_after_s({"EXPDNA_UNFINISHED_AFTER": "-1"}) == 24 * 3600.0


def test_status_is_outside_the_dna_and_optional() -> None:
    doc = synthetic_doc(1)
    plain = manifest_of(doc)
    assert plain.status is None and "status" not in plain.to_dict()
    with_status = manifest_of({**doc, "status": started(T0).model_dump(mode="json")})
    assert with_status.dna == plain.dna
    assert Manifest.model_validate(with_status.to_dict()).status == with_status.status


class _Probe:
    """An open run that leaves a file behind when it is ended."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def end(self, error: BaseException | None = None, *, signal_name: str | None = None) -> None:
        self.path.write_text(f"{os.getpid()} {signal_name}")


def test_a_forked_child_never_ends_its_parents_run(tmp_path: Path) -> None:
    probe = _Probe(tmp_path / "ended")
    exits.watch(probe)
    try:
        child = os.fork()
        if child == 0:  # a DataLoader worker, say: it inherited the exit hook and the list
            exits._end_all(None, "SIGTERM")
            os._exit(0)
        os.waitpid(child, 0)
        assert not probe.path.exists()
        assert any(run is probe and pid == os.getpid() for run, pid in exits._open)
    finally:
        exits.forget(probe)
