"""The blob-writing helper process: a call of several batches hands blobs to it, anything
that goes wrong with it falls back to writing in the recorder, and the order "blobs first,
index rows last" holds throughout. Real helper processes, real files, real SQLite."""

from __future__ import annotations

import io
import logging
import os
import signal
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from expdna.digest import hex_of
from expdna.errors import InvalidInputError
from expdna.manifest.io import write_manifest
from expdna.manifest.model import Manifest
from expdna.store import Store
from expdna.store.objects.blobwriter import BlobWriter, serve
from expdna.store.objects.directory import ObjectDir
from tests.factories import synthetic

BATCH = 80  # at least expdna.store.record.recorder.MIN_HELPER_BLOBS runs a batch


def helpers() -> list[int]:
    """Process ids of this process's blob-writing helpers (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat_line = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat_line.rsplit(")", 1)[1].split()[1])
        state = stat_line.rsplit(")", 1)[1].split()[0]
        if ppid == os.getpid() and state != "Z" and b"expdna.store.objects.blobwriter" in cmdline:
            found.append(int(entry.name))
    return found


def runs(count: int, start: int = 0) -> list[Manifest]:
    return [synthetic(i, setup=i // 2) for i in range(start, start + count)]


def consistent(store: Store, expected: int) -> None:
    assert len(store.runs()) == expected
    report = store.fsck()
    assert report.ok, report.problems
    assert report.unreferenced == 0
    assert report.objects == expected + 1  # one manifest a run, one patch shared by all


pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def test_a_call_of_several_batches_writes_through_a_helper_that_ends_with_it(
    tmp_path: Path,
) -> None:
    seen: list[int] = []

    def watched(manifests: list[Manifest]) -> Iterator[Manifest]:
        for k, manifest in enumerate(manifests):
            if k % BATCH == BATCH - 1:  # while each batch is made
                seen.append(len(helpers()))
            yield manifest

    with Store.open(tmp_path / "store") as store:
        store.record_many(watched(runs(BATCH)), batch_size=BATCH)  # one batch: written here
        assert seen == [0] and helpers() == []
        seen.clear()
        results = store.record_many(watched(runs(4 * BATCH, start=BATCH)), batch_size=BATCH)
        assert [r.status for r in results] == ["recorded"] * 4 * BATCH
        # made while: nothing was written, the first batch was written here, then the
        # second and third were at the helper
        assert seen == [0, 0, 1, 1]
        assert helpers() == []  # it ended with the call
        consistent(store, 5 * BATCH)
        for run in runs(5 * BATCH):
            assert store.load(run.run_id).run_id == run.run_id


def test_a_helper_killed_mid_call_loses_nothing_and_is_not_restarted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    later: list[int] = []

    def killing() -> Iterator[Manifest]:
        for k, manifest in enumerate(runs(6 * BATCH)):
            if k == 2 * BATCH + BATCH // 2:  # the helper has the second batch, or had it
                (pid,) = helpers()
                os.kill(pid, signal.SIGKILL)
                while pid in helpers():
                    time.sleep(0.01)
            elif k > 3 * BATCH and k % BATCH == BATCH // 2:
                later.append(len(helpers()))
            yield manifest

    caplog.set_level(logging.INFO, logger="expdna.store")
    with Store.open(tmp_path / "store") as store:
        results = store.record_many(killing(), batch_size=BATCH)
        assert [r.status for r in results] == ["recorded"] * 6 * BATCH
        assert later == [0, 0, 0]  # the call wrote the rest itself
        assert "writing" in caplog.text and "in this process" in caplog.text
        store.gc(grace_s=0)  # temporary files of a helper killed in the middle of a batch
        consistent(store, 6 * BATCH)


def test_an_invalid_manifest_records_the_batches_before_it_and_none_of_its_own(
    tmp_path: Path,
) -> None:
    manifests = runs(4 * BATCH)
    manifests[2 * BATCH + 5] = manifests[2 * BATCH + 5].model_copy(update={"run_id": "a b"})
    with Store.open(tmp_path / "store") as store:
        with pytest.raises(InvalidInputError, match="run id 'a b' is not usable"):
            store.record_many(manifests, batch_size=BATCH)
        recorded = sorted(r.run_id for r in store.runs())
        assert recorded == sorted(m.run_id for m in manifests[: 2 * BATCH])
        consistent(store, 2 * BATCH)
        # the store carries on: the rest is recorded by the next call, helper and all
        manifests[2 * BATCH + 5] = synthetic(2 * BATCH + 5, setup=BATCH + 2)
        statuses = [r.status for r in store.record_many(manifests, batch_size=BATCH)]
        assert statuses == ["skipped"] * 2 * BATCH + ["recorded"] * 2 * BATCH
        consistent(store, 4 * BATCH)


def test_a_scan_abandoned_half_way_leaves_the_store_usable(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    for manifest in runs(4 * BATCH):
        write_manifest(manifest, tmp_path / "runs" / f"manifest_{manifest.run_id}.json")
    with Store.open(tmp_path / "store") as store:
        scanning = store.scan(tmp_path / "runs", batch_size=BATCH)
        first = [next(scanning) for _ in range(BATCH + 1)]  # into the second batch
        scanning.close()
        assert {r.status for r in first} == {"recorded"}
        statuses = [r.status for r in store.scan(tmp_path / "runs", batch_size=BATCH)]
        assert statuses.count("recorded") + statuses.count("skipped") == 4 * BATCH
        store.gc(grace_s=0)
        consistent(store, 4 * BATCH)


def frame(*blobs: bytes) -> bytes:
    size = struct.Struct("<Q")
    return size.pack(len(blobs)) + b"".join(size.pack(len(b)) + b for b in blobs)


def test_the_helper_names_objects_by_their_own_blake3_and_replies_per_batch(
    tmp_path: Path,
) -> None:
    objects = ObjectDir(tmp_path / "objects")
    replies = io.BytesIO()
    serve(objects.root, io.BytesIO(frame(b"one", b"two", b"one") + frame(b"three")), replies)
    assert replies.getvalue() == b"ok\nok\n"
    assert sorted(objects) == sorted(hex_of(b) for b in (b"one", b"two", b"three"))
    assert objects.read_verified(hex_of(b"two")) == b"two"


def test_the_helper_drops_a_batch_cut_off_and_reports_a_write_error(tmp_path: Path) -> None:
    objects = ObjectDir(tmp_path / "objects")
    replies = io.BytesIO()
    serve(objects.root, io.BytesIO(frame(b"whole") + frame(b"cut", b"off")[:-2]), replies)
    assert replies.getvalue() == b"ok\n"
    assert list(objects) == [hex_of(b"whole")]

    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    replies = io.BytesIO()
    serve(blocked, io.BytesIO(frame(b"x")), replies)
    assert replies.getvalue().startswith(b"error ")


def test_a_helper_that_died_hands_its_batch_back(tmp_path: Path) -> None:
    writer = BlobWriter.start(tmp_path / "objects")
    assert writer is not None
    try:
        assert writer.send([b"a", b"b"])
        assert writer.wait() == ()
        os.kill(writer._process.pid, signal.SIGKILL)
        writer._process.wait()
        sent = [b"c" * 100_000, b"d"]
        if writer.send(sent):  # the pipe may still take it
            assert writer.wait() == sent
    finally:
        writer.close()
    assert sorted(ObjectDir(tmp_path / "objects")) == sorted([hex_of(b"a"), hex_of(b"b")])


def test_no_helper_where_the_interpreter_is_not_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an application embedding Python: its executable would not run our entry point
    monkeypatch.setattr("sys.executable", "/usr/bin/uwsgi")
    assert BlobWriter.start(tmp_path / "objects") is None
    with Store.open(tmp_path / "store") as store:
        results = store.record_many(runs(3 * BATCH), batch_size=BATCH)
        assert [r.status for r in results] == ["recorded"] * 3 * BATCH
        consistent(store, 3 * BATCH)


def test_the_helper_writes_a_batch_s_log_entry_before_its_objects(tmp_path: Path) -> None:
    from expdna.store.objects.log import StoreLog, encode_entry

    entry, data = encode_entry("record", {"runs": [["r1", hex_of(b"one"), []]]})
    name = entry.name.encode()
    size = struct.Struct("<Q")
    head = size.pack(1 | 1 << 63) + size.pack(len(name)) + name + size.pack(len(data)) + data
    objects = ObjectDir(tmp_path / "objects")
    replies = io.BytesIO()
    serve(objects.root, io.BytesIO(head + size.pack(3) + b"one"), replies)
    assert replies.getvalue() == b"ok\n"
    log = StoreLog(objects.root)
    assert log.names() == [entry.name] and log.read(entry.name).body == entry.body
    assert list(objects) == [hex_of(b"one")]

    bad = b"../escape"
    replies = io.BytesIO()
    frame = size.pack(1 | 1 << 63) + size.pack(len(bad)) + bad + size.pack(1) + b"x"
    serve(objects.root, io.BytesIO(frame + size.pack(3) + b"two"), replies)
    assert replies.getvalue().startswith(b"error ")
    assert hex_of(b"two") not in set(objects) and log.names() == [entry.name]


def test_a_call_s_log_entries_past_its_first_batch_are_the_helper_s_to_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from expdna.store.objects.log import StoreLog

    written: list[str] = []
    add = StoreLog.add

    def spy(self: StoreLog, name: str, data: bytes, *, pending: bool = False) -> None:
        written.append(name)
        add(self, name, data, pending=pending)

    monkeypatch.setattr(StoreLog, "add", spy)
    with Store.open(tmp_path / "store") as store:
        store.record_many(runs(3 * BATCH), batch_size=BATCH)
        consistent(store, 3 * BATCH)
        assert len(written) == 1  # the first batch's, written here
        assert len(store.log.names()) == 3
