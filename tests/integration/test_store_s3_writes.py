"""How a store in a bucket is written, against the session's real SeaweedFS: the training
hook through this machine's spool and a background upload, and create-only writes on a
server that does not honour ``If-None-Match`` (forced with ``EXPDNA_S3_CONDITIONAL_PUT``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import obstore
import pytest

from expdna.digest import hex_of
from expdna.store import Store
from expdna.store.config import StoreConfig
from expdna.store.errors import CorruptObjectError, StoreError
from expdna.store.objects.readcache import BLOBS, ReadCache
from expdna.store.objects.s3 import CONDITIONAL_ENV, S3Objects
from expdna.store.objects.spool import SPOOL, Spool
from tests.factories import synthetic
from tests.integration.test_store_s3 import _bucket, _keys
from tests.s3server import SeaweedServer, _free_ports

pytestmark = pytest.mark.s3

_TRAIN = """
import os, signal, sys, expdna
run = expdna.start({"lr": 0.1}, output_dir="out", collectors=["config", "command"])
run.add_runtime()
print(run.manifest.run_id, flush=True)
if sys.argv[1] == "die":  # before any upload could end: as the OOM killer would
    os.kill(os.getpid(), signal.SIGKILL)
run.finish({"loss": 0.5})
print(sorted(m for m in ("sqlalchemy", "alembic") if m in sys.modules), flush=True)
"""


def _train(env: dict[str, str], cwd: Path, how: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _TRAIN, how],
        env={**os.environ, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_hooked_run_reaches_the_bucket_and_the_index_without_sqlalchemy(
    s3_server: SeaweedServer, s3_env: dict[str, str], s3_url: str, tmp_path: Path
) -> None:
    with Store.open(s3_url) as store:  # the store exists: the hook writes through its spool
        store.record(synthetic(1))
    done = _train({**s3_env, "EXPDNA_STORE": s3_url}, tmp_path, "finish")
    assert done.returncode == 0, done.stderr
    run_id, imported = done.stdout.split("\n")[:2]
    assert imported == "[]"  # the training process never loaded the index's libraries
    keys = _keys(_bucket(s3_server, s3_url))
    markers = [k for k in keys if k.startswith("objects/log/pending/")]
    assert len(markers) == 3  # record, metrics, status: each waits for the index
    spool = Spool(StoreConfig.resolve(s3_url).root / SPOOL)
    assert spool.waiting() == []  # all uploaded by finish()
    with Store.open(s3_url) as store:  # the next open applies them
        assert store.show(run_id)["run_id"] == run_id
        assert store.metrics(run_id)["loss"] == 0.5
        assert store.fsck().ok
    assert not any(k.startswith("objects/log/pending/") for k in _keys(_bucket(s3_server, s3_url)))


def test_a_process_killed_before_its_upload_loses_nothing_it_committed(
    s3_server: SeaweedServer, s3_env: dict[str, str], s3_url: str, tmp_path: Path
) -> None:
    with Store.open(s3_url) as store:
        store.record(synthetic(2))
    before = set(_keys(_bucket(s3_server, s3_url)))
    # an endpoint that refuses connections: nothing can go up before the process dies
    closed = f"http://127.0.0.1:{_free_ports(1)[0]}"
    done = _train({**s3_env, "EXPDNA_STORE": s3_url, "AWS_ENDPOINT_URL": closed}, tmp_path, "die")
    assert done.returncode == -signal.SIGKILL, done.stderr
    run_id = done.stdout.split()[0]
    assert set(_keys(_bucket(s3_server, s3_url))) == before  # nothing half-written there
    spool = Spool(StoreConfig.resolve(s3_url).root / SPOOL)
    assert len(spool.waiting()) == 1
    with Store.open(s3_url) as store:  # the next process here uploads it, then applies it
        assert store.show(run_id)["run_id"] == run_id
        assert store.fsck().ok
    assert spool.waiting() == [] and not list(spool.objects)


def _objects(s3_env: dict[str, str], s3_url: str, mode: str) -> S3Objects:
    return S3Objects(s3_url, environ={**s3_env, CONDITIONAL_ENV: mode})


def test_without_if_none_match_a_verified_head_guards_every_write(
    s3_server: SeaweedServer,
    s3_env: dict[str, str],
    s3_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CONDITIONAL_ENV, "off")
    runs = [synthetic(3), synthetic(4)]
    with Store.open(s3_url) as store:  # the id, the log entry, the objects: all by HEAD
        assert store.objects.conditional is False  # type: ignore[attr-defined]
        store.record_many(runs)
        assert store.fsck().ok
    objects = _objects(s3_env, s3_url, "off")
    bucket = _bucket(s3_server, s3_url)
    data = b"written once"
    digest = objects.put(data)
    first = obstore.head(bucket, objects.key(digest))
    time.sleep(1.1)  # a rewrite would show in last_modified (second resolution)
    assert objects.put(data) == digest
    assert obstore.head(bucket, objects.key(digest))["last_modified"] == first["last_modified"]
    # an object holding other bytes than its name says: refused, and left as it is
    for wrong in (b"written twice", b"other bytes"):  # the same size, then another size
        right = wrong.replace(b"t", b"T")
        key = objects.key(hex_of(right))
        obstore.put(bucket, key, wrong)
        with pytest.raises(CorruptObjectError, match="corrupt"):
            objects.put(right)
        assert bytes(obstore.get(bucket, key).bytes()) == wrong


def test_the_server_is_asked_once_whether_it_honours_if_none_match(
    s3_env: dict[str, str], s3_url: str
) -> None:
    with Store.open(s3_url) as store:
        store.record(synthetic(5))
    objects = _objects(s3_env, s3_url, "auto")
    assert objects.conditional is None
    objects.put(b"asked")
    assert objects.conditional is True  # SeaweedFS refused the id's second create
    with pytest.raises(StoreError, match=CONDITIONAL_ENV):
        _objects(s3_env, s3_url, "sometimes")


def test_objects_read_once_are_read_from_a_verified_local_copy(
    s3_server: SeaweedServer, s3_url: str
) -> None:
    manifest = synthetic(6)
    with Store.open(s3_url) as store:
        store.record(manifest)
        digest = store.get(manifest.run_id).manifest_digest
        shown = store.show(manifest.run_id)
    cache = ReadCache(StoreConfig.resolve(s3_url).root / BLOBS)
    copy = cache.root / digest[:2] / digest[2:]
    assert hex_of(copy.read_bytes()) == digest
    copy.write_bytes(b"{}")  # a damaged copy is never served: read again from the bucket
    with Store.open(s3_url) as store:
        assert store.show(manifest.run_id) == shown
    assert hex_of(copy.read_bytes()) == digest
    bucket = _bucket(s3_server, s3_url)
    obstore.put(bucket, f"objects/{digest[:2]}/{digest[2:]}", b"{}")  # the bucket's changed
    with Store.open(s3_url) as store:
        assert store.show(manifest.run_id) == shown  # the copy is still those bytes
        report = store.fsck()  # but fsck asks the bucket itself
    assert not report.ok and digest in str(report.problems)
