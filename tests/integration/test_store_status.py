"""A run's end told to the store after it was recorded: a ``status`` log entry updates the
``runs.state`` column and the run's ``status.`` facts, ``--where`` selects on both, and
``reindex`` replays the entry into a rebuilt index (real SQLite store, the installed CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expdna.errors import InvalidInputError
from expdna.store import SQLITE_NAME, Store
from expdna.store.errors import RunNotFoundError
from expdna.store.queries import parse_where
from tests.factories import manifest_of, run, synthetic_doc

STARTED = {"state": "running", "started_at": "2026-12-01T21:00:00Z", "host": "node-7"}
FAILED = {
    **STARTED,
    "state": "failed",
    "exit_code": 1,
    "error": {"type": "RuntimeError", "message": "loss is NaN"},
    "ended_at": "2026-12-01T21:05:00Z",
    "duration_s": 300.0,
    "peak_rss_bytes": 2_000_000,
}


def _states(store: Store, *where: str) -> dict[str, str | None]:
    return {r.run_id: r.state for r in store.runs(where=[parse_where(w) for w in where])}


def test_the_shown_states_select_by_age(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``unfinished`` is ``running`` older than $EXPDNA_UNFINISHED_AFTER, as the listing says."""
    root = tmp_path / "store"
    runs = [{**synthetic_doc(i), "status": STARTED} for i in (1, 2)]
    runs[1]["generated_at"] = "2999-01-01T00:00:00Z"  # started "now": not yet unfinished
    with Store.open(root) as store:
        for doc in runs:
            store.record(manifest_of(doc))
        old, young = (doc["run_id"] for doc in runs)
        assert _states(store, "status.state=unfinished") == {old: "running"}
        assert _states(store, "status.state=running") == {old: "running", young: "running"}
    shown = run(root, "runs", "--json", "--where", "status.state=unfinished")
    assert [(r["run_id"], r["unfinished"]) for r in json.loads(shown.stdout)] == [(old, True)]
    for endless in (str(10**12), "inf"):  # past the calendar: no run is unfinished
        monkeypatch.setenv("EXPDNA_UNFINISHED_AFTER", endless)
        with Store.open(root) as store:
            assert _states(store, "status.state=unfinished") == {}
        listed = run(root, "runs", "--json")  # the setting reaches the process
        assert listed.returncode == 0, listed.stderr
        assert not any(r["unfinished"] for r in json.loads(listed.stdout))


def test_a_status_entry_updates_the_run_and_survives_a_reindex(tmp_path: Path) -> None:
    root = tmp_path / "store"
    running = {**synthetic_doc(1), "status": STARTED}
    old = synthetic_doc(2)  # recorded before status existed
    with Store.open(root) as store:
        store.record(manifest_of(running))
        store.record(manifest_of(old))
        rid, old_id = running["run_id"], old["run_id"]
        assert _states(store) == {rid: "running", old_id: None}
        assert store.record_status(rid, FAILED) == "failed"
        assert _states(store, "status.state=failed") == {rid: "failed"}
        assert _states(store, "status.error.type=RuntimeError") == {rid: "failed"}
        assert _states(store, "status.host=node-7") == {rid: "failed"}
        assert _states(store, "status.state=running") == {}
        # another rank's later (or earlier) end: the worse one stands, in either order
        assert store.record_status(rid, {**FAILED, "state": "completed"}) == "failed"
        assert store.record_status(rid, {**STARTED, "state": "interrupted"}) == "failed"
        # of equal ends the first stands: the real error, not a rank's knock-on one
        knock_on = {"type": "DistNetworkError", "message": "Connection closed by peer"}
        assert store.record_status(rid, {**FAILED, "error": knock_on, "rank": 1}) == "failed"
        assert _states(store, "status.error.type=RuntimeError") == {rid: "failed"}
        assert _states(store, "status.rank=1") == {}
        # the STATE column's words select too: no status section, and running too long
        assert _states(store, "status.state=unknown") == {old_id: None}
        assert _states(store, "status.state=unfinished") == {}
        # the stored manifest is an object: it keeps what was recorded
        assert store.show(rid)["status"]["state"] == "running"
        with pytest.raises(InvalidInputError):
            store.record_status(rid, {"state": "exploded", "started_at": "x"})
        with pytest.raises(RunNotFoundError):
            store.record_status("20261201_000000_deadbee_zzzz", FAILED)

    (root / SQLITE_NAME).unlink()
    rebuilt = run(root, "reindex", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout)["problems"] == []
    listed = run(root, "runs", "--json", "--where", "status.state=failed")
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [rid]
    parquet = tmp_path / "runs.parquet"
    exported = run(root, "export", "--parquet", str(parquet), "--where", "status.exit_code=1")
    assert exported.returncode == 0, exported.stderr
    import pyarrow.parquet as pq

    table = pq.read_table(parquet).to_pydict()
    assert table["run_id"] == [rid] and table["state"] == ["failed"]
