"""Commands that agree: --json where people script, run ids wherever a manifest file is
accepted, --where comparing numbers by value and naming near paths, and permissions
(dropped with setpriv: the tests run as root) answered in one line."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from expdna.manifest.io import write_manifest
from tests.factories import EXPDNA, invoke, run, synthetic

# Tests run as root, whom permissions do not stop: this drops root's override of them
# (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) for the command, which still reaches a venv under
# /root, as a user would reach their own. Files it must not read belong to another user.
NO_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]
OTHER_USER = 65534


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("agree")
    files = [write_manifest(synthetic(i), root / f"m{i}.json") for i in range(3)]
    done = run(root / "store", "record", *map(str, files))
    assert done.returncode == 0, done.stderr
    return root / "store"


def test_json_on_fsck_gc_db_current_export_and_link(store: Path, tmp_path: Path) -> None:
    fsck = run(store, "fsck", "--json")
    assert fsck.returncode == 0, fsck.stderr
    assert json.loads(fsck.stdout) == {
        "ok": True,
        "objects": json.loads(fsck.stdout)["objects"],
        "runs": 3,
        "problems": [],
        "unreferenced": 0,
        "temp_files": 0,
        "pending": 0,
        "unfinished": [],
    }
    gc = json.loads(invoke(store, "gc", "--dry-run", "--json").stdout)
    assert gc == {
        "removed": [],
        "removed_bytes": 0,
        "temp_files": [],
        "kept_young": 0,
        "irregular": [],
        "dry_run": True,
    }
    current = invoke(store, "db", "current", "--json")
    assert current.exit_code == 0
    revision = json.loads(current.stdout)
    assert revision["current"] is True and revision["revision"] == revision["head"]
    parent, child = synthetic(0).run_id, synthetic(1).run_id
    link = json.loads(invoke(store, "link", parent, child, "--as", "rerun_of", "--json").stdout)
    assert link == {"added": True, "parent": parent, "child": child, "relation": "rerun_of"}
    pytest.importorskip("pyarrow")
    target = tmp_path / "runs.parquet"
    export = invoke(store, "export", "--parquet", str(target), "--json")
    assert json.loads(export.stdout) == {"runs": 3, "path": str(target)}


def test_where_compares_numbers_by_value(store: Path) -> None:
    # recorded: lr 0.0003, global_batch_size 16, memory_gb 79.6
    for where in (
        "config.resolved_args.lr=3e-4",
        "config.resolved_args.lr=0.00030",
        "training.global_batch_size=16.0",
        "training.global_batch_size=1.6e1",
        "hardware.gpus.memory_gb=79.60",
    ):
        found = invoke(store, "find", "--where", where, "--json")
        assert found.exit_code == 0, (where, found.stderr)
        assert len(json.loads(found.stdout)) == 3
    assert invoke(store, "find", "--where", "training.global_batch_size=16.5").exit_code == 1
    # text stays text: the same characters match, others do not
    assert invoke(store, "runs", "--where", "training.algorithm=grpo").exit_code == 0


def test_an_unknown_where_path_names_the_nearest(store: Path) -> None:
    done = run(store, "find", "--where", "hardware.gpu.vbios_version=96.00.5A.00.01")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "no runs match: no run has hardware.gpu.vbios_version (nearest: "
        "hardware.gpus.vbios_version, hardware.cuda_version, hardware.driver_version)"
    ]
    known = invoke(store, "runs", "--where", "training.algorithm=ppo")
    assert known.exit_code == 1 and known.stderr == "no runs match\n"


def test_rerun_and_data_verify_take_a_run_id(store: Path, tmp_path: Path) -> None:
    run_id = synthetic(1).run_id
    script = run(store, "rerun", run_id, "--dry-run", cwd=tmp_path)
    assert script.returncode == 0, script.stderr
    assert f"# run:          {run_id}" in script.stdout
    by_prefix = invoke(store, "rerun", synthetic(1).dna.value[:8], "--dry-run")  # type: ignore[union-attr]
    assert by_prefix.exit_code == 0 and by_prefix.stdout == script.stdout
    verify = invoke(store, "data", "verify", run_id, "--json")
    assert verify.exit_code == 1  # /data/set is not on this machine
    assert json.loads(verify.stdout)["datasets"][0]["root"] == "/data/set"
    unknown = invoke(store, "rerun", "20990101_000000_nogit_zzzz", "--dry-run")
    assert unknown.exit_code == 1 and "no recorded run" in unknown.stderr


def without_override(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "EXPDNA_INDEX_URL"}
    env["EXPDNA_STORE"] = str(cwd / "store")
    env["HOME"] = str(cwd)
    env["XDG_CACHE_HOME"] = str(cwd / "cache")
    return subprocess.run(
        [*NO_OVERRIDE, EXPDNA, *args], capture_output=True, text=True, timeout=60, env=env, cwd=cwd
    )


def test_unreadable_and_unwritable_paths_are_one_line(tmp_path: Path) -> None:
    shared_tmp = tmp_path
    locked = shared_tmp / "locked"
    locked.mkdir(mode=0o555)
    done = without_override("generate", "--output", str(locked / "m.json"), cwd=shared_tmp)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"expdna: error: {locked / 'm.json'}: cannot write: Permission denied"
    ]
    secret = write_manifest(synthetic(3), shared_tmp / "secret.json")
    secret.chmod(0o600)
    os.chown(secret, OTHER_USER, OTHER_USER)
    readable = write_manifest(synthetic(4), shared_tmp / "readable.json")
    readable.chmod(0o644)
    done = without_override("record", str(secret), str(readable), cwd=shared_tmp)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"expdna: error: {secret}: cannot read: Permission denied"]
    assert done.stdout.splitlines()[-1] == "recorded 1, skipped 0, failed 1"
