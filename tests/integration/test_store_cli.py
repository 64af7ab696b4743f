"""Store commands through the installed ``expdna`` command (each at least once) and, for
the error variations, click's runner."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from expdna.manifest.io import write_manifest
from expdna.store import Store
from tests.factories import (
    DRIVER,
    EXPDNA,
    VBIOS,
    collide_prefix,
    git,
    invoke,
    rows,
    run,
    synthetic,
)


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 manifest files: 6 setups of 2 runs, setup 0 and 3 on VBIOS, odd setups on DRIVER."""
    root = tmp_path_factory.mktemp("manifests")
    (root / "deep").mkdir()
    for i in range(12):
        setup = i // 2
        manifest = synthetic(
            i,
            setup=setup,
            vbios=VBIOS if setup % 3 == 0 else "x",
            driver=DRIVER if setup % 2 else "535.104.05",
        )
        directory = root / "deep" if i % 3 else root  # --scan looks below DIR
        write_manifest(manifest, directory / f"manifest_{manifest.run_id}.json")
    return root


@pytest.fixture(scope="module")
def store(manifests: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("cli") / "store"
    done = run(path, "record", "--scan", str(manifests))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "recorded 12, skipped 0, failed 0"
    yield path


def test_record_files_then_again_skips(store: Path, manifests: Path) -> None:
    files = sorted(manifests.rglob("manifest_*.json"))[:2]
    done = run(store, "record", *map(str, files), "--json")
    assert done.returncode == 0, done.stderr
    results = rows(done.stdout)
    assert [r["status"] for r in results] == ["skipped", "skipped"]
    assert {"run_id", "dna", "generated_at"} <= results[0].keys()
    again = invoke(store, "record", "--scan", str(manifests))
    assert again.exit_code == 0
    assert again.stdout.splitlines()[-1] == "recorded 0, skipped 12, failed 0"


def test_record_records_each_good_file_and_names_each_bad_one(tmp_path: Path) -> None:
    store = tmp_path / "store"
    good = write_manifest(synthetic(500), tmp_path / "good.json")
    doc = json.loads(good.read_text())
    doc["run_id"] = "20260805_000000_1c8e2fb_edit"
    doc["command"]["argv"][3] = "1.0"
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(doc))
    (tmp_path / "broken.json").write_text("{")
    later = write_manifest(synthetic(501), tmp_path / "later.json")
    files = [good, bad, tmp_path / "broken.json", later]
    result = invoke(store, "record", *map(str, files))
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"expdna: error: {bad}: ") and "corrupted or edited" in lines[0]
    assert lines[1].startswith(f"expdna: error: {tmp_path / 'broken.json'}: invalid JSON")
    assert result.stdout.splitlines()[-1] == "recorded 2, skipped 0, failed 2"
    for run_id in (synthetic(500).run_id, synthetic(501).run_id):
        assert invoke(store, "show", run_id).exit_code == 0
    quiet = invoke(store, "record", "--quiet", *map(str, files))
    assert quiet.exit_code == 2 and quiet.stdout == ""
    assert quiet.stderr.splitlines() == lines
    missing = invoke(store, "record", str(tmp_path / "absent.json"))
    assert missing.exit_code == 2 and "no such file" in missing.stderr
    assert invoke(store, "record").exit_code == 2


def test_scan_reports_failures_and_records_the_rest(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    write_manifest(synthetic(600), tmp_path / "runs" / "manifest_a.json")
    (tmp_path / "runs" / "manifest_b.json").write_text("[]")
    (tmp_path / "runs" / "config.json").write_text("{}")
    (tmp_path / "runs" / "manifest_dir.json").mkdir()
    result = invoke(tmp_path / "store", "record", "--scan", str(tmp_path / "runs"))
    assert result.exit_code == 2
    assert result.stdout.splitlines()[-1] == "recorded 1, skipped 0, failed 1"
    runs = tmp_path / "runs"
    assert result.stderr.splitlines() == [
        f"expdna: passed over {runs / 'config.json'}: not named manifest_*.json",
        f"expdna: passed over {runs / 'manifest_dir.json'}: not a regular file (a directory)",
        f"expdna: error: {runs / 'manifest_b.json'}: expected a JSON object, found list",
    ]
    quiet = invoke(tmp_path / "store", "record", "-q", "--scan", str(tmp_path / "runs"))
    assert quiet.exit_code == 2 and quiet.stdout == ""
    assert quiet.stderr.splitlines() == result.stderr.splitlines()[-1:]
    # --scan names a directory: a file is one, a missing path another
    a_file = invoke(tmp_path / "store", "record", "--scan", str(runs / "config.json"))
    assert a_file.exit_code == 2 and "config.json: not a directory" in a_file.stderr
    missing = invoke(tmp_path / "store", "record", "--scan", str(runs / "nope"))
    assert missing.exit_code == 2 and "nope: no such directory" in missing.stderr


def test_show_summary_json_inline_and_store_form(store: Path, manifests: Path) -> None:
    path = sorted(manifests.rglob("manifest_*.json"))[0]
    doc = json.loads(path.read_text())
    summary = run(store, "show", doc["run_id"])
    assert summary.returncode == 0, summary.stderr
    assert f"dna        {doc['dna']['value']}" in summary.stdout
    as_json = rows(invoke(store, "show", doc["dna"]["value"][:8], "--json").stdout)
    assert as_json[0]["dna"] == doc["dna"]["value"] and "sections" in as_json[0]
    inline = run(store, "show", doc["run_id"], "--inline")
    assert inline.returncode == 0 and inline.stdout.encode() == path.read_bytes()
    stored = json.loads(invoke(store, "show", doc["run_id"], "--manifest").stdout)
    assert "text" not in stored["code"]["train"]["patch"]


def test_show_errors_are_one_line_with_the_right_exit_code(store: Path) -> None:
    unknown = run(store, "show", "20990101_000000_nogit_zzzz")
    assert unknown.returncode == 1 and "no recorded run" in unknown.stderr
    for bad in ("../../etc/passwd", "blake3:../x", "a b"):
        result = invoke(store, "show", bad)
        assert result.exit_code == 2 and "not a run id or DNA prefix" in result.stderr
    short = invoke(store, "show", "abc")
    assert short.exit_code == 2 and "at least 6" in short.stderr
    assert invoke(store, "show", "ffffff").exit_code == 1


def test_an_ambiguous_prefix_lists_candidates(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with Store.open(root) as opened:
        opened.record_many([synthetic(700), synthetic(701)])
        first, second = opened.runs()
        crafted = collide_prefix(opened, second.run_id, first.dna)
    result = run(root, "show", first.dna[:6])
    assert result.returncode == 2
    assert "ambiguous" in result.stderr
    assert first.dna[:12] in result.stderr and crafted[:12] in result.stderr


def test_runs_table_and_filters(store: Path) -> None:
    table = run(store, "runs", "--limit", "3")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["RUN", "DNA", "GENERATED"] and len(lines) == 4
    assert "--limit 0" in table.stderr
    every = rows(invoke(store, "runs", "--json", "--limit", "0").stdout)
    assert len(every) == 12
    assert [r["generated_at"] for r in every] == sorted(
        (r["generated_at"] for r in every), reverse=True
    )
    dna = every[0]["dna"]
    same = rows(invoke(store, "runs", "--dna", dna[:7], "--json").stdout)
    assert {r["dna"] for r in same} == {dna} and len(same) == 2
    where = invoke(
        store,
        "runs",
        "--where",
        "config.resolved_args.seed=4",
        "--where",
        "training.algorithm=grpo",
        "--json",
    )
    assert len(rows(where.stdout)) == 2
    since = rows(invoke(store, "runs", "--since", "2026-08-05T00:00:10Z", "--json").stdout)
    assert len(since) == 2
    none = invoke(store, "runs", "--where", "training.algorithm=ppo")
    assert none.exit_code == 1 and "no runs match" in none.stderr
    assert invoke(store, "runs", "--since", "last tuesday").exit_code == 2
    assert invoke(store, "runs", "--where", "no-equals-sign").exit_code == 2


def test_twins_of_a_run_and_of_a_manifest_file(store: Path, manifests: Path) -> None:
    path = sorted(manifests.rglob("manifest_*.json"))[0]
    doc = json.loads(path.read_text())
    by_run = run(store, "twins", doc["run_id"], "--json")
    assert by_run.returncode == 0, by_run.stderr
    twins = rows(by_run.stdout)
    assert len(twins) == 2 and {t["dna"] for t in twins} == {doc["dna"]["value"]}
    by_file = rows(invoke(store, "twins", str(path), "--json").stdout)
    assert by_file == twins
    lonely = write_manifest(synthetic(900, setup=900), path.parent / "lonely.json")
    assert invoke(store, "twins", str(lonely)).exit_code == 1


def test_find_by_hardware_fields_and_paths(store: Path) -> None:
    vbios = run(store, "find", "--vbios", VBIOS, "--json")
    assert vbios.returncode == 0, vbios.stderr
    assert len(rows(vbios.stdout)) == 4  # setups 0 and 3
    both = rows(invoke(store, "find", "--vbios", VBIOS, "--driver", DRIVER, "--json").stdout)
    assert len(both) == 2  # setup 3 only
    table = invoke(
        store, "find", "--gpu", "NVIDIA H100 80GB HBM3", "--cuda", "12.4", "--nccl", "2.23.4"
    )
    assert table.exit_code == 0 and len(table.stdout.splitlines()) == 13
    where = rows(invoke(store, "find", "--where", "hardware.gpus.vbios_version=x", "--json").stdout)
    assert len(where) == 8
    assert invoke(store, "find", "--vbios", "nope").exit_code == 1
    assert invoke(store, "find").exit_code == 2


def test_find_limit_zero_is_all_as_in_runs(store: Path) -> None:
    every = run(store, "find", "--where", "schema_version=1.0", "--limit", "0", "--json")
    assert every.returncode == 0, every.stderr
    assert len(rows(every.stdout)) == 12
    two = rows(
        invoke(store, "find", "--where", "schema_version=1.0", "--limit", "2", "--json").stdout
    )
    assert [r["run_id"] for r in two] == [r["run_id"] for r in rows(every.stdout)[:2]]


@pytest.mark.parametrize(
    "args", [("runs",), ("runs", "--json"), ("find", "--gpu", "NVIDIA H100 80GB HBM3")]
)
def test_a_reader_that_stops_early_ends_the_command_quietly(
    store: Path, args: tuple[str, ...]
) -> None:
    """``expdna runs | head -1``: the reader is gone before the command writes."""
    env = {**os.environ, "EXPDNA_STORE": str(store)}
    env.pop("EXPDNA_INDEX_URL", None)
    process = subprocess.Popen(
        [EXPDNA, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before the command has started: its first write finds no reader
    errors = process.stderr.read().decode()
    assert process.wait(timeout=60) == 0, errors
    assert errors == ""


def test_fsck_and_gc(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with Store.open(root) as opened:
        opened.record_many([synthetic(i) for i in range(3)])
        stray = opened.objects.put(b"unreferenced")
        victim = opened.get(synthetic(1).run_id).manifest_digest
    clean = run(root, "fsck")
    assert clean.returncode == 0, clean.stdout
    assert "0 problems; 1 unreferenced objects" in clean.stdout
    dry = run(root, "gc", "--dry-run", "--grace", "0")
    assert dry.returncode == 0 and f"would remove blake3:{stray}" in dry.stdout
    gone = invoke(root, "gc", "--grace", "0")
    assert gone.exit_code == 0 and "removed 1 objects" in gone.stdout
    path = root / "objects" / victim[:2] / victim[2:]
    os.chmod(path, 0o644)
    path.write_bytes(b"bit rot")
    broken = invoke(root, "fsck")
    assert broken.exit_code == 1
    assert f"problem: object blake3:{victim} is corrupt" in broken.stdout
    path.unlink()
    missing = invoke(root, "fsck")
    assert missing.exit_code == 1 and f"missing object blake3:{victim}" in missing.stdout


def test_db_current_and_upgrade(tmp_path: Path) -> None:
    from expdna.store.index.migrate import HEAD

    root = tmp_path / "store"
    upgraded = run(root, "db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"upgraded from (empty) to {HEAD}" in upgraded.stdout
    current = run(root, "db", "current")
    assert current.returncode == 0 and current.stdout.startswith(f"{HEAD} (head)")
    assert f"already at revision {HEAD}" in invoke(root, "db", "upgrade").stdout


def test_index_url_errors_are_usage_errors(tmp_path: Path) -> None:
    result = invoke(tmp_path, "--index-url", "mysql://x/y", "runs")
    assert result.exit_code == 2 and "unsupported index URL" in result.stderr


def test_generate_record(repo: Path, tmp_path: Path) -> None:
    root = tmp_path / "store"
    (repo / "train.py").write_text("print('changed')\n")  # a dirty checkout: a patch
    done = run(
        root,
        "generate",
        "--record",
        "--output",
        str(tmp_path / "m.json"),
        "--json",
        "--",
        "python",
        "train.py",
        "--lr",
        "0.1",
        cwd=repo,
    )
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert f"recorded run {info['run_id']}" in done.stderr
    with Store.open(root) as opened:
        assert opened.get(info["run_id"]).dna == info["dna"]
        shown = opened.show(info["run_id"], inline=True)
        assert "print('changed')" in shown["code"]["proj"]["patch"]["text"]
        assert opened.fsck().ok
    assert git(repo, "status", "--porcelain") == "M train.py"


def test_twins_of_a_manifest_file_of_an_older_dna_version(tmp_path: Path) -> None:
    from expdna.manifest.dna import compute_dna

    old = synthetic(700, setup=700)
    old.dna = compute_dna(old, version=2)
    path = write_manifest(old, tmp_path / "old.json")
    store = tmp_path / "store"
    assert run(store, "record", str(path)).returncode == 0
    by_run = rows(invoke(store, "twins", old.run_id, "--json").stdout)
    assert [t["dna"] for t in by_run] == [old.dna.value]
    # the file names the run recorded from it, in the version it was written in
    assert rows(invoke(store, "twins", str(path), "--json").stdout) == by_run
    assert rows(invoke(store, "twins", str(path), "--across-seeds", "--json").stdout) == by_run


def test_twins_of_an_edited_manifest_file_says_so(tmp_path: Path) -> None:
    store = tmp_path / "store"
    manifest = synthetic(710, setup=710)
    assert run(store, "record", str(write_manifest(manifest, tmp_path / "a.json"))).returncode == 0
    doc = json.loads((tmp_path / "a.json").read_text())
    doc["dna"]["value"] = "0" * 64
    (tmp_path / "edited.json").write_text(json.dumps(doc))
    edited = invoke(store, "twins", str(tmp_path / "edited.json"), "--json")
    assert edited.exit_code == 0
    [twin] = rows(edited.stdout)
    assert twin["run_id"] == manifest.run_id
    assert edited.stderr.splitlines() == [
        f"expdna: warning: {tmp_path / 'edited.json'}: stored DNA 000000000000 does not match "
        f"its content ({twin['dna'][:12]}); looking for twins of the recomputed one"
    ]
    doc["dna"]["version"] = 99
    (tmp_path / "future.json").write_text(json.dumps(doc))
    future = invoke(store, "twins", str(tmp_path / "future.json"))
    assert future.exit_code == 2
    assert future.stderr.startswith(f"expdna: error: {tmp_path / 'future.json'}: DNA version 99")
