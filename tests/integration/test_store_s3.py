"""The store on S3-compatible storage, against a real SeaweedFS on loopback (tests.s3server).

Every command here is the installed ``expdna`` in a subprocess with the standard AWS
variables; the bucket is read back with obstore to check what it holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import obstore
import pytest
from obstore.store import S3Store

from expdna.digest import hex_of
from expdna.manifest.io import write_manifest
from expdna.store import Store
from tests.factories import EXPDNA, synthetic
from tests.integration.conftest import BUCKET
from tests.s3server import SeaweedServer

pytestmark = pytest.mark.s3


def _run(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXPDNA, *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _bucket(server: SeaweedServer, url: str) -> S3Store:
    bucket, _, prefix = url[len("s3://") :].partition("/")
    return S3Store(
        bucket,
        prefix=prefix or None,
        config={
            "endpoint": server.endpoint,
            "access_key_id": server.env()["AWS_ACCESS_KEY_ID"],
            "secret_access_key": server.env()["AWS_SECRET_ACCESS_KEY"],
            "region": "us-east-1",
        },
        client_options={"allow_http": True},
    )


def _keys(store: S3Store) -> list[str]:
    return sorted(str(meta["path"]) for page in obstore.list(store) for meta in page)


def _manifests(directory: Path, count: int, start: int = 0) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    run_ids = []
    for i in range(start, start + count):
        manifest = synthetic(i, setup=i // 2)
        write_manifest(manifest, directory / f"manifest_{i:05d}.json")
        run_ids.append(manifest.run_id)
    return run_ids


def test_record_show_fsck_gc_reindex_in_a_bucket(
    s3_server: SeaweedServer, s3_env: dict[str, str], s3_url: str, tmp_path: Path
) -> None:
    run_ids = _manifests(tmp_path / "runs", 12)
    done = _run(s3_env, "--store", s3_url, "record", "--scan", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stderr
    bucket = _bucket(s3_server, s3_url)
    keys = _keys(bucket)
    # the layout of a store directory: fan-out objects, the id, the log
    assert "objects/store-id" in keys
    objects = [k for k in keys if len(k.split("/")) == 3 and len(k.split("/")[1]) == 2]
    assert objects and all(len(k.split("/")[2]) == 62 for k in objects)
    assert any(k.startswith("objects/log/") for k in keys)
    for key in objects:  # each object is named by the BLAKE3 of its bytes
        data = bytes(obstore.get(bucket, key).bytes())
        assert hex_of(data) == key.split("/")[1] + key.split("/")[2]
    # the local index sits in the cache, not in the bucket
    assert not any(k.endswith(".sqlite") for k in keys)

    shown = _run(s3_env, "--store", s3_url, "show", run_ids[3], "--manifest")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["run_id"] == run_ids[3]
    fsck = _run(s3_env, "--store", s3_url, "fsck")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr

    # again: every run skipped, no object rewritten
    before = {str(m["path"]): m["last_modified"] for p in obstore.list(bucket) for m in p}
    again = _run(s3_env, "--store", s3_url, "record", "--scan", str(tmp_path / "runs"))
    assert again.returncode == 0, again.stderr
    after = {str(m["path"]): m["last_modified"] for p in obstore.list(bucket) for m in p}
    assert {k: after[k] for k in before} == before

    # an unreferenced object is removed by gc, the runs' objects stay
    stray = b'{"not": "referenced"}'
    stray_key = f"objects/{hex_of(stray)[:2]}/{hex_of(stray)[2:]}"
    obstore.put(bucket, stray_key, stray)
    gc = _run(s3_env, "--store", s3_url, "gc", "--grace", "0")
    assert gc.returncode == 0, gc.stderr
    assert stray_key not in _keys(bucket)
    assert _run(s3_env, "--store", s3_url, "fsck").returncode == 0

    # the local index lost: reindex rebuilds it from the bucket alone
    cache = Path(s3_env["XDG_CACHE_HOME"])
    for database in cache.rglob("index.sqlite*"):
        database.unlink()
    lost = _run(s3_env, "--store", s3_url, "show", run_ids[0])
    assert lost.returncode == 2 and "reindex" in lost.stderr
    rebuilt = _run(s3_env, "--store", s3_url, "reindex")
    assert rebuilt.returncode == 0, rebuilt.stderr
    listed = _run(s3_env, "--store", s3_url, "runs", "--limit", "0", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {run["run_id"] for run in json.loads(listed.stdout)} == set(run_ids)


def test_pin_link_metrics_and_the_api_on_a_bucket(
    s3_env: dict[str, str], s3_url: str, tmp_path: Path
) -> None:
    first, second = synthetic(1), synthetic(2)
    with Store.open(s3_url) as store:
        store.record(first)
        store.record(second)
        assert store.link(first.run_id, second.run_id, "derived_from")
        checkpoint = tmp_path / "model.pt"
        checkpoint.write_bytes(b"weights" * 100)
        pin = store.pin_file(checkpoint, run=second.run_id)
        assert store.which(f"blake3:{pin.digest}")[0].run_id == second.run_id
        store.record_metrics(second.run_id, {"loss": 0.25})
        assert store.load(second.run_id).run_id == second.run_id
    # everything the index holds is in the bucket's log: a rebuilt index answers the same
    for database in Path(s3_env["XDG_CACHE_HOME"]).rglob("index.sqlite*"):
        database.unlink()
    assert _run(s3_env, "--store", s3_url, "reindex").returncode == 0
    with Store.open(s3_url) as store:
        assert [a.run_id for a in store.lineage(second.run_id).ancestors] == [first.run_id]
        assert store.metrics(second.run_id)["loss"] == 0.25
        assert store.which(f"blake3:{pin.digest}")[0].run_id == second.run_id


def test_a_corrupt_object_in_the_bucket_is_refused_on_read(
    s3_server: SeaweedServer, s3_env: dict[str, str], s3_url: str
) -> None:
    manifest = synthetic(7)
    with Store.open(s3_url) as store:
        store.record(manifest)
        digest = store.get(manifest.run_id).manifest_digest
    bucket = _bucket(s3_server, s3_url)
    obstore.put(bucket, f"objects/{digest[:2]}/{digest[2:]}", b"{}")  # someone overwrote it
    shown = _run(s3_env, "--store", s3_url, "show", manifest.run_id)
    assert shown.returncode == 1 and "corrupt" in shown.stderr
    fsck = _run(s3_env, "--store", s3_url, "fsck")
    assert fsck.returncode == 1 and "corrupt" in fsck.stdout


def _one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_errors_are_one_line_exit_2(
    s3_server: SeaweedServer, s3_env: dict[str, str], s3_url: str, tmp_path: Path
) -> None:
    _manifests(tmp_path / "runs", 2)
    runs = str(tmp_path / "runs")
    missing = _run(s3_env, "--store", "s3://no-such-bucket/x", "record", "--scan", runs)
    assert "bucket no-such-bucket does not exist" in _one_error_line(missing)

    reader = {**s3_env, **s3_server.env(reader=True)}
    denied = _run(reader, "--store", s3_url, "record", "--scan", runs)
    assert "access denied" in _one_error_line(denied)

    wrong = {**s3_env, "AWS_SECRET_ACCESS_KEY": "not-the-secret"}
    denied = _run(wrong, "--store", s3_url, "record", "--scan", runs)
    assert "access denied" in _one_error_line(denied)

    closed = {**s3_env, "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}
    started = time.monotonic()
    unreachable = _run(closed, "--store", s3_url, "record", "--scan", runs)
    assert "does not answer" in _one_error_line(unreachable)
    assert time.monotonic() - started < 60
    assert _run(s3_env, "--store", "s3://Bad_Bucket", "runs").returncode == 2


@pytest.mark.postgres
def test_an_index_shared_by_two_buckets_is_refused(
    s3_server: SeaweedServer, s3_env: dict[str, str], pg_url: str, tmp_path: Path
) -> None:
    s3_server.make_bucket("expdna-other")
    _manifests(tmp_path / "runs", 3)
    runs = str(tmp_path / "runs")
    first = f"s3://{BUCKET}/shared-{os.getpid()}"
    for args in (("db", "upgrade"), ("record", "--scan", runs)):
        done = _run(s3_env, "--store", first, "--index-url", pg_url, *args)
        assert done.returncode == 0, done.stderr
    second = "s3://expdna-other/x"
    other = _run(s3_env, "--store", second, "--index-url", pg_url, "record", "--scan", runs)
    line = _one_error_line(other)
    assert "belongs to store" in line and second in line
    assert _keys(_bucket(s3_server, second)) == []  # refused: nothing written there


def test_the_hook_records_into_a_bucket_and_generate_keeps_no_credential(
    s3_env: dict[str, str], s3_url: str, tmp_path: Path
) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import expdna\n"
        "run = expdna.start({'lr': 0.1}, output_dir='out',\n"
        "                   collectors=['config', 'environment', 'command'])\n"
        "run.finish()\n"
        "print(run.manifest.run_id)\n"
    )
    env = {**s3_env, "EXPDNA_STORE": s3_url}
    done = subprocess.run(
        [os.sys.executable, str(script)],  # type: ignore[attr-defined]
        env={**os.environ, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip().splitlines()[-1]
    shown = _run(s3_env, "--store", s3_url, "show", run_id, "--inline")
    assert shown.returncode == 0, shown.stderr
    manifest_text = "".join(p.read_text() for p in (tmp_path / "out").glob("manifest_*.json"))
    (tmp_path / "gen").mkdir()
    generated = _run(env, "generate", "-o", str(tmp_path / "gen"), "--", "true")
    assert generated.returncode == 0, generated.stderr
    manifest_text += "".join(p.read_text() for p in (tmp_path / "gen").glob("manifest_*.json"))
    for secret in (s3_env["AWS_SECRET_ACCESS_KEY"], s3_env["AWS_ACCESS_KEY_ID"]):
        assert secret not in manifest_text
        assert secret not in shown.stdout


@pytest.mark.filterwarnings("ignore:Using `httpx`")
def test_the_web_view_reads_a_store_in_a_bucket(s3_env: dict[str, str], s3_url: str) -> None:
    from starlette.testclient import TestClient

    from expdna.store.config import StoreConfig
    from expdna.ui.app import create_app

    first, second = synthetic(11), synthetic(12)
    with Store.open(s3_url) as store:
        store.record_many([first, second])
    with TestClient(create_app(StoreConfig.resolve(s3_url)), base_url="http://localhost") as client:
        runs = client.get("/")
        assert runs.status_code == 200 and first.run_id in runs.text
        page = client.get(f"/runs/{first.run_id}")  # the manifest, read from the bucket
        assert page.status_code == 200 and first.dna.value[:12] in page.text
