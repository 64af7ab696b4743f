"""A ``pin`` log entry written before its run's ``record`` entry (as the training hook of an
older expdna wrote it) is applied after that record, by catch-up and by ``reindex``.

Real store directories and SQLite files, the real log writer the training process uses,
the installed ``expdna`` (and the session's SeaweedFS for a store in a bucket).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expdna.digest import hex_of, ref
from expdna.store import Store
from expdna.store.config import StoreConfig
from expdna.store.deferred import writer
from expdna.store.objects.log import StoreLog
from tests.factories import run, synthetic

WEIGHTS = b"the weights of a checkpoint pinned before its run was recorded"


def _pin_early(config: StoreConfig, i: int, name: str) -> tuple[str, object]:
    """A pin entry for run ``i``, before any record entry of it; returns the run id and
    the (still open) writer, whose ``record`` completes the run."""
    manifest = synthetic(i)
    log_writer = writer(config)
    log_writer.pin(
        run_id=manifest.run_id, digest=ref(hex_of(WEIGHTS)), name=name, size=len(WEIGHTS)
    )
    return manifest.run_id, (log_writer, manifest)


def _which(store: Path, name: str) -> list[str]:
    found = run(store, "which", name, "--json")
    assert found.returncode in (0, 1), found.stderr
    return [p["run_id"] for p in json.loads(found.stdout)] if found.returncode == 0 else []


def test_catch_up_applies_a_pin_after_its_runs_later_record(tmp_path: Path) -> None:
    store = tmp_path / "store"
    Store.open(store).close()
    config = StoreConfig.resolve(store)
    run_id, (log_writer, manifest) = _pin_early(config, 1, "early.pt")
    # the training is still running: its record is not written yet; the pin waits
    assert _which(store, "early.pt") == []
    assert len(StoreLog(store / "objects").pending()) == 1
    log_writer.record(manifest)  # type: ignore[attr-defined]
    assert _which(store, "early.pt") == [run_id]
    assert StoreLog(store / "objects").pending() == []
    # both in the log, in one catch-up: the same answer
    other, (log_writer, manifest) = _pin_early(config, 2, "other.pt")
    log_writer.record(manifest)  # type: ignore[attr-defined]
    assert _which(store, "other.pt") == [other]
    fsck = run(store, "fsck")
    assert fsck.returncode == 0, fsck.stdout


def test_reindex_applies_a_pin_after_its_runs_later_record(tmp_path: Path) -> None:
    store = tmp_path / "store"
    Store.open(store).close()
    config = StoreConfig.resolve(store)
    run_id, (log_writer, manifest) = _pin_early(config, 3, "early.pt")
    log_writer.record(manifest)  # type: ignore[attr-defined]
    (store / "index.sqlite").unlink()  # no catch-up: the index is rebuilt from the log
    rebuilt = run(store, "reindex")
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert "problem" not in rebuilt.stdout + rebuilt.stderr
    logged = StoreLog(store / "objects")
    (pin_entry,) = [e for e in map(logged.read, logged.names()) if e.kind == "pin"]
    with Store.open_for_reading(store) as opened:
        (pinned,) = opened.which("early.pt")
    assert pinned.run_id == run_id
    assert pinned.pinned_at is not None
    assert pinned.pinned_at.replace(tzinfo=None) == pin_entry.at  # the entry's own time
    fsck = run(store, "fsck")
    assert fsck.returncode == 0, fsck.stdout


@pytest.mark.s3
def test_a_spooled_pin_before_its_record_reaches_the_index_of_a_bucket(
    s3_env: dict[str, str], s3_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in s3_env.items():
        monkeypatch.setenv(key, value)
    with Store.open(s3_url) as store:
        store.record(synthetic(4))
    config = StoreConfig.resolve(s3_url)
    run_id, (spool_writer, manifest) = _pin_early(config, 5, "early.pt")
    spool_writer.record(manifest)  # type: ignore[attr-defined]
    spool_writer.close()  # type: ignore[attr-defined]
    with Store.open(s3_url) as store:  # catch-up from the bucket's log
        assert [p.run_id for p in store.which("early.pt")] == [run_id]
        assert store.fsck().ok
