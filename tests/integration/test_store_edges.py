"""The store at its edges: an object directory read as untrusted, a missing index, a newer
index, writes the filesystem refuses, the log invariant, and two CLI edges (``ui`` on a
busy port, ``record --scan --quiet DIR``). Real SQLite files and the installed command."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from expdna.manifest.io import write_manifest
from expdna.store import SQLITE_NAME, Store
from expdna.store.fsck import log_gaps
from expdna.store.index.revision import HEAD
from tests.factories import EXPDNA, run, synthetic


@pytest.fixture
def one_run(tmp_path: Path) -> tuple[Path, str]:
    """A store holding one run recorded from a file, and its run id."""
    manifest = synthetic(0)
    store = tmp_path / "store"
    done = run(store, "record", str(write_manifest(manifest, tmp_path / "m.json")))
    assert done.returncode == 0, done.stderr
    return store, manifest.run_id


# --- the object directory, read as untrusted -----------------------------------------------

#: Object names for the crafted entries (any 64 hex: they are named as objects would be).
FIFO, FOLDER, HUGE = ("aa" + "1" * 62, "bb" + "2" * 62, "cc" + "3" * 62)


def _craft(store: Path) -> None:
    objects = store / "objects"
    for digest in (FIFO, FOLDER, HUGE):
        (objects / digest[:2]).mkdir(exist_ok=True)
    os.mkfifo(objects / FIFO[:2] / FIFO[2:])
    (objects / FOLDER[:2] / FOLDER[2:]).mkdir()
    with open(objects / HUGE[:2] / HUGE[2:], "wb") as handle:
        handle.truncate(1 << 30)  # 1 GiB, sparse: no disk, but a whole read would be 1 GiB


#: Runs an expdna command in this interpreter and prints its exit code and peak memory.
_MEASURED = """
import sys
from expdna.cli import main
sys.argv = ["expdna", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    code = exc.code
# VmHWM is this process's own high-water mark: ru_maxrss would carry the forking pytest
# process's peak across the exec (Linux keeps it), and that grows with the suite.
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print("exit", code, "peak_kib", peak)
"""


def _measured(store: Path, *args: str) -> tuple[int, int, str]:
    env = {**os.environ, "EXPDNA_STORE": str(store)}
    env.pop("EXPDNA_INDEX_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, *args],
        capture_output=True,
        text=True,
        timeout=120,  # a FIFO opened for reading would block here forever
        env=env,
    )
    *_, last = done.stdout.splitlines()
    _, code, _, peak = last.split()
    return int(code), int(peak), done.stdout + done.stderr


def test_fsck_reindex_and_gc_report_crafted_objects_without_opening_them(
    one_run: tuple[Path, str],
) -> None:
    store, run_id = one_run
    _craft(store)
    code, peak_kib, out = _measured(store, "fsck")
    assert code == 1, out
    assert f"object blake3:{FIFO} in {store / 'objects'} is a FIFO, not a file" in out
    assert f"object blake3:{FOLDER} in {store / 'objects'} is a directory, not a file" in out
    assert f"object blake3:{HUGE} is corrupt" in out  # hashed, in bounded chunks
    assert "Traceback" not in out
    assert peak_kib < 400 * 1024, f"fsck peaked at {peak_kib} KiB for a 1 GiB object"

    code, peak_kib, out = _measured(store, "reindex")
    assert code == 1, out  # the two irregular entries named; the run rebuilt
    assert "is a FIFO, not a file" in out and "is a directory, not a file" in out
    assert "reindexed 1 runs" in out
    assert peak_kib < 400 * 1024, f"reindex peaked at {peak_kib} KiB"

    gc = run(store, "gc", "--dry-run", "--grace", "0")
    assert gc.returncode == 0, gc.stderr
    assert "is a FIFO, not a file" in gc.stderr and "Traceback" not in gc.stderr
    assert (store / "objects" / FIFO[:2] / FIFO[2:]).exists()
    shown = run(store, "show", run_id)
    assert shown.returncode == 0, shown.stderr


def test_a_manifest_object_over_the_cap_is_reported_not_loaded(tmp_path: Path) -> None:
    from expdna.store.objects.directory import ObjectDir
    from expdna.store.objects.log import StoreLog

    store = tmp_path / "store"
    Store.open(store).close()
    objects = ObjectDir(store / "objects")
    big = b'{"run_id": "x", "pad": "' + b"a" * (5 << 20) + b'"}'
    digest = objects.put(big)
    StoreLog(objects.root).append("record", {"runs": [["20260101_000000_nogit_a", digest, []]]})
    done = run(store, "reindex")
    assert done.returncode == 1, done.stdout
    assert f"object blake3:{digest} holds {len(big)} bytes, over the" in done.stdout


# --- a missing index -------------------------------------------------------------------------

#: Commands on a store whose index is gone; RUN stands for its run id, OUT for a new file.
COMMANDS = [
    ("runs",),
    ("show", "RUN"),
    ("twins", "RUN"),
    ("find", "--vbios", "x"),
    ("which", "ckpt.pt"),
    ("lineage", "RUN"),
    ("stability", "RUN"),
    ("export", "--parquet", "OUT"),
    ("db", "current"),
    ("db", "upgrade"),
    ("record", "MANIFEST"),
    ("pin", "MANIFEST", "--run", "RUN"),
    ("check", "RUN"),
    ("diff", "RUN", "RUN"),
    ("gc",),
]


@pytest.mark.parametrize("lost", ["deleted", "emptied"])
def test_every_command_on_a_store_without_its_index_names_reindex(
    one_run: tuple[Path, str], tmp_path: Path, lost: str
) -> None:
    store, run_id = one_run
    (store / SQLITE_NAME).unlink()
    if lost == "emptied":  # truncated to nothing: no schema, as good as gone
        (store / SQLITE_NAME).write_bytes(b"")
    left = sorted(p.name for p in store.iterdir())
    named = {
        "RUN": run_id,
        "OUT": str(tmp_path / "o.parquet"),
        "MANIFEST": str(tmp_path / "m.json"),
    }
    for command in COMMANDS:
        done = run(store, *[named.get(arg, arg) for arg in command])
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert "index missing: run expdna reindex" in done.stderr, (command, done.stderr)
        assert len(done.stderr.splitlines()) == 1, (command, done.stderr)
        assert sorted(p.name for p in store.iterdir()) == left, command
        assert not (store / SQLITE_NAME).exists() or (store / SQLITE_NAME).stat().st_size == 0
    fsck = run(store, "fsck")
    assert fsck.returncode == 1 and "index missing: run expdna reindex" in fsck.stdout
    rebuilt = run(store, "reindex")
    assert rebuilt.returncode == 0, rebuilt.stdout
    assert run(store, "show", run_id).returncode == 0


def test_a_query_on_an_index_without_tables_names_reindex_and_writes_nothing(
    one_run: tuple[Path, str], tmp_path: Path
) -> None:
    store, run_id = one_run
    (store / SQLITE_NAME).unlink()
    for leftover in store.glob(SQLITE_NAME + "-*"):
        leftover.unlink()
    blank = sqlite3.connect(store / SQLITE_NAME)  # a valid SQLite file, no expdna tables
    with blank:
        blank.execute("CREATE TABLE t (x)")
        blank.execute("DROP TABLE t")
    blank.close()
    before = (store / SQLITE_NAME).read_bytes()
    for command in (("runs",), ("show", run_id), ("twins", run_id), ("stability", run_id)):
        done = run(store, *command)
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert done.stderr.startswith("expdna: error: index missing: run expdna reindex"), command
        assert len(done.stderr.splitlines()) == 1, (command, done.stderr)
    fsck = run(store, "fsck")
    assert fsck.returncode == 1
    assert fsck.stdout.startswith("problem: index missing: run expdna reindex"), fsck.stdout
    assert (store / SQLITE_NAME).read_bytes() == before  # no schema made behind our back
    assert run(store, "reindex").returncode == 0
    assert run(store, "show", run_id).returncode == 0


# --- a newer index ---------------------------------------------------------------------------


def test_reindex_refuses_a_newer_revision_unless_forced(one_run: tuple[Path, str]) -> None:
    store, run_id = one_run
    conn = sqlite3.connect(store / SQLITE_NAME)
    with conn:
        conn.execute("UPDATE alembic_version SET version_num = 'f0f0f0f0f0f0'")
    conn.close()
    refused = run(store, "reindex")
    assert refused.returncode == 2, refused.stdout
    assert "revision f0f0f0f0f0f0, newer than this expdna knows" in refused.stderr
    assert "--force" in refused.stderr and len(refused.stderr.splitlines()) == 1
    forced = run(store, "reindex", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "dropping the tables and columns that revision added" in forced.stderr
    conn = sqlite3.connect(store / SQLITE_NAME)
    assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == (HEAD,)
    conn.close()
    assert run(store, "show", run_id).returncode == 0


# --- writes the filesystem refuses -----------------------------------------------------------


def _read_only(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``expdna ARGS`` seeing ``store`` through a read-only bind mount (as
    tests/integration/test_store_readonly.py does)."""
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root and unshare")
    env = {**os.environ, "EXPDNA_STORE": str(store)}
    env.pop("EXPDNA_INDEX_URL", None)
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(store), EXPDNA, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_every_write_on_a_read_only_store_is_one_line_exit_2(
    one_run: tuple[Path, str], tmp_path: Path
) -> None:
    store, run_id = one_run
    other = synthetic(1)
    done = run(store, "record", str(write_manifest(other, tmp_path / "m1.json")))
    assert done.returncode == 0, done.stderr
    checkpoint = tmp_path / "ckpt.pt"
    checkpoint.write_bytes(b"weights")
    fresh = write_manifest(synthetic(2), tmp_path / "m2.json")
    for args in (
        ("pin", str(checkpoint), "--run", run_id),
        ("link", run_id, other.run_id, "--as", "derived_from"),
        ("reindex",),
        ("record", str(fresh)),
    ):
        refused = _read_only(store, *args)
        assert refused.returncode == 2, (args, refused.stderr)
        (line,) = refused.stderr.splitlines()  # no traceback: one line naming the store
        assert line.startswith("expdna: error: ") and str(store) in line, (args, line)

    out = tmp_path / "generated.json"
    generated = _read_only(store, "generate", "--record", "-o", str(out), "--", "true")
    assert generated.returncode == 2, generated.stderr
    wrote, error = generated.stderr.splitlines()[-2:]
    assert wrote.startswith(f"expdna: wrote {out} (run ") and wrote.endswith("not recorded:")
    assert "Read-only file system" in error and out.is_file()


# --- the log invariant -----------------------------------------------------------------------


def test_fsck_names_runs_without_log_entries_and_entries_without_runs(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with Store.open(store) as opened:
        first, second = synthetic(0), synthetic(1)
        opened.record(first)
        opened.record(second)
        names = opened.log.names()
    assert run(store, "fsck").returncode == 0
    os.chmod(store / "objects" / "log" / names[0], 0o644)
    (store / "objects" / "log" / names[0]).unlink()  # the first run's record entry
    conn = sqlite3.connect(store / SQLITE_NAME)
    with conn:  # the second run's rows, as a lost transaction would leave them
        conn.execute("DELETE FROM runs WHERE run_id = ?", (second.run_id,))
    conn.close()
    fsck = run(store, "fsck")
    assert fsck.returncode == 1
    assert f"1 runs in the index have no log entry ({first.run_id})" in fsck.stdout
    assert f"1 runs named by applied log entries are not in the index ({second.run_id})" in (
        fsck.stdout
    )


# --- two CLI edges ---------------------------------------------------------------------------


def test_ui_on_a_busy_port_is_one_line_exit_2(one_run: tuple[Path, str]) -> None:
    store, _ = one_run
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run(store, "ui", "--port", str(port))
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"expdna: error: expdna ui cannot listen on 127.0.0.1:{port}")
    assert "serving" not in done.stderr


def test_record_scan_takes_quiet_anywhere(one_run: tuple[Path, str], tmp_path: Path) -> None:
    store, _ = one_run
    runs = tmp_path / "runs"
    runs.mkdir()
    write_manifest(synthetic(3), runs / "manifest_3.json")
    quiet = run(store, "record", "--scan", "--quiet", str(runs))
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == ""
    again = run(store, "record", "--scan", str(runs), "--quiet", "--json")
    assert again.returncode == 0, again.stderr
    assert [r["status"] for r in json.loads(again.stdout)] == ["skipped"]
    usage = run(store, "record", "--scan", str(runs), str(runs))
    assert usage.returncode == 2 and "one directory" in usage.stderr


def test_log_gaps_sees_a_healthy_store_as_whole(tmp_path: Path) -> None:
    with Store.open(tmp_path / "store") as opened:
        opened.record_many([synthetic(i) for i in range(6)], batch_size=2)
        assert log_gaps(opened.reads, list(opened.log.entries())) == []
