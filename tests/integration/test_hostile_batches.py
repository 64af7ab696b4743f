"""Hostile input in batches, through the installed ``expdna`` command: each file judged on
its own (SQLite and PostgreSQL alike), NUL refused at the boundary, lineage kept a DAG,
non-regular checkpoints refused, Ctrl-C leaving a consistent store."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from expdna.manifest.io import write_manifest
from tests.factories import EXPDNA, interruptible, invoke, manifest_of, synthetic, synthetic_doc

TIMEOUT_S = 60


def expdna(
    store: Path, *args: str, index_url: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EXPDNA_STORE": str(store)}
    env.pop("EXPDNA_INDEX_URL", None)
    if index_url is not None:
        env["EXPDNA_INDEX_URL"] = index_url
    return subprocess.run(
        [EXPDNA, *args], capture_output=True, text=True, timeout=TIMEOUT_S, env=env, cwd=cwd
    )


def with_nul(i: int, path: Path) -> Path:
    """Manifest ``i`` with a NUL in a config string, its DNA computed over it."""
    doc = synthetic_doc(i)
    doc["config"]["resolved_args"]["name"] = "a\x00b"
    write_manifest(manifest_of(doc), path)
    assert "\\u0000" in path.read_text()
    return path


def nul_batch(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    for i in range(10):
        write_manifest(synthetic(800 + i), runs / f"manifest_{i:02d}.json")
    with_nul(810, runs / "manifest_nul.json")
    return runs


def check_nul_batch(done: subprocess.CompletedProcess[str], runs: Path) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stdout.splitlines()[-1] == "recorded 10, skipped 0, failed 1"
    assert done.stderr.splitlines() == [
        f"expdna: error: {runs / 'manifest_nul.json'}: NUL character in "
        "config.resolved_args.name: an index cannot hold it (record the value in the "
        "escaped form, bytes:...%00)"
    ]


def test_a_nul_sinks_only_its_own_file_on_sqlite(tmp_path: Path) -> None:
    runs = nul_batch(tmp_path)
    check_nul_batch(expdna(tmp_path / "store", "record", "--scan", str(runs)), runs)


@pytest.mark.postgres
def test_a_nul_sinks_only_its_own_file_on_postgres(tmp_path: Path, pg_url: str) -> None:
    runs = nul_batch(tmp_path)
    store = tmp_path / "store"
    assert expdna(store, "db", "upgrade", index_url=pg_url).returncode == 0
    done = expdna(store, "record", "--scan", str(runs), index_url=pg_url)
    check_nul_batch(done, runs)
    listed = expdna(store, "runs", "--json", "--limit", "0", index_url=pg_url)
    assert len(json.loads(listed.stdout)) == 10


def test_the_escaped_form_writes_nul_as_percent_00() -> None:
    from expdna.manifest.escape import escape, to_bytes

    assert escape("a\x00b") == "bytes:a%00b"
    assert to_bytes("bytes:a%00b") == b"a\x00b"


def test_lineage_naming_each_other_is_refused_at_record(tmp_path: Path) -> None:
    a, b = synthetic_doc(820), synthetic_doc(821)
    a["lineage"] = [{"relation": "rerun_of", "parent": b["run_id"]}]
    b["lineage"] = [{"relation": "rerun_of", "parent": a["run_id"]}]
    files = [write_manifest(manifest_of(d), tmp_path / f"{d['run_id']}.json") for d in (a, b)]
    store = tmp_path / "store"
    assert expdna(store, "record", str(files[0])).returncode == 0
    done = expdna(store, "record", str(files[1]))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"expdna: error: {files[1]}: lineage would make a cycle: run {b['run_id']} is "
        f"already an ancestor of its parent ({a['run_id']})"
    ]
    lineage = json.loads(invoke(store, "lineage", a["run_id"], "--json").stdout)
    assert a["run_id"] not in [edge["run_id"] for edge in lineage]
    assert invoke(store, "fsck").exit_code == 0
    # a run naming itself is refused as well, before anything is written
    c = synthetic_doc(822)
    c["lineage"] = [{"relation": "derived_from", "parent": c["run_id"]}]
    self_file = write_manifest(manifest_of(c), tmp_path / "self.json")
    refused = invoke(store, "record", str(self_file))
    assert refused.exit_code == 2 and "names the run itself" in refused.stderr


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_pin_and_which_never_read_a_fifo_or_device(tmp_path: Path, kind: str) -> None:
    store = tmp_path / "store"
    good = write_manifest(synthetic(830), tmp_path / "m.json")
    assert expdna(store, "record", str(good)).returncode == 0
    target = tmp_path / "model.pth"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 5))  # like /dev/zero: endless
    what = "a FIFO" if kind == "fifo" else "a character device"
    done = expdna(store, "pin", str(target), "--run", synthetic(830).run_id)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"expdna: error: {target}: not a regular file ({what})"]
    which = expdna(store, "which", str(target))
    assert which.returncode == 2
    assert which.stderr.splitlines() == [
        f"expdna: error: {target}: not a regular file ({what}), not a checkpoint file"
    ]


def test_ctrl_c_exits_130_and_leaves_the_store_consistent(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    # 12 batches: with the log entry written ahead of a batch's objects and record at
    # ~2,000 runs/s, 2,000 runs could all be recorded before a loaded test saw the log
    count = 6000
    doc = manifest_of(synthetic_doc(0)).to_dict()  # the run id is outside the DNA
    for i in range(count):
        doc["run_id"] = f"20260805_143025_1c8e2fb_{i:06d}"
        (runs / f"manifest_{i:05d}.json").write_text(json.dumps(doc))
    store = tmp_path / "store"
    env = {**os.environ, "EXPDNA_STORE": str(store)}
    env.pop("EXPDNA_INDEX_URL", None)
    proc = subprocess.Popen(
        [EXPDNA, "record", "--scan", str(runs)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        preexec_fn=interruptible,
    )
    # a batch's log entry is written before its objects: recording has begun, and a
    # batch of the 2,000 runs is still to come, however loaded the machine
    log_dir = store / "objects" / "log"
    deadline = time.monotonic() + TIMEOUT_S
    while not (log_dir.is_dir() and any(log_dir.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the scan ended before Ctrl-C: the test's race, not a result"
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
    out, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 130, (out, err)
    assert err.splitlines()[-1] == "expdna: interrupted" and "Traceback" not in err
    assert expdna(store, "fsck").returncode == 0
    again = expdna(store, "record", "--scan", str(runs), "--json")
    assert again.returncode == 0, again.stderr
    statuses = [result["status"] for result in json.loads(again.stdout)]
    assert len(statuses) == count and set(statuses) <= {"recorded", "skipped"}
    assert "recorded" in statuses  # the interrupted call did not finish


def test_a_number_that_overflows_to_infinity_is_refused(tmp_path: Path) -> None:
    doc = synthetic(840).to_dict()
    doc.pop("dna")
    doc["metrics"]["loss"] = "OVERFLOW"
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc).replace('"OVERFLOW"', "1e400"))
    for command in ("record", "check"):
        done = expdna(tmp_path / "store", command, str(path))
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            f"expdna: error: {path}: invalid JSON: number 1e400 is out of range for a float "
            "(not finite)"
        ]
    assert not (tmp_path / "store").exists()


def test_export_needs_no_pyarrow(tmp_path: Path) -> None:
    store = tmp_path / "store"
    manifest = write_manifest(synthetic(841), tmp_path / "m.json")
    assert expdna(store, "record", str(manifest)).returncode == 0
    # pyarrow made unimportable in that process only, as where it is not installed
    code = (
        "import sys; sys.modules['pyarrow'] = sys.modules['pyarrow.parquet'] = None; "
        "from expdna.cli import main; sys.argv[1:] = ['export', '--parquet', 'x.parquet']; main()"
    )
    env = {**os.environ, "EXPDNA_STORE": str(store)}
    env.pop("EXPDNA_INDEX_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
        timeout=TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "exported 1 runs to x.parquet\n"
    assert pq.read_table(tmp_path / "x.parquet").column("run_id").to_pylist() == [
        synthetic(841).run_id
    ]
