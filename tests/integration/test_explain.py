"""``expdna explain`` over synthetic fleets with a planted cause, recorded into real stores
(SQLite files, and the PostgreSQL server), through the installed command and the library."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from expdna.explain.outcome import asked
from expdna.explain.query import explain_runs
from expdna.explain.report import ALPHA
from expdna.manifest.family import setup_of
from expdna.store import Store
from expdna.store.explain import setup_runs
from tests.factories import invoke, manifest_of, run
from tests.fleets import (
    DRIVERS,
    NCCL,
    VBIOS,
    confounded_fleet,
    fleet_doc,
    nccl_fleet,
    null_fleet,
    record_fleet,
    vbios_fleet,
)


def _store(tmp_path: Path, docs: list[dict[str, Any]]) -> Path:
    root = tmp_path / "store"
    store = Store.open(root)
    try:
        record_fleet(store, docs)
    finally:
        store.close()
    return root


def _significant(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["adjusted_p"] < ALPHA]


def _finding(report: dict[str, Any], path: str) -> dict[str, Any]:
    [found] = [f for f in report["findings"] if path in f["fields"]]
    return found


def test_a_vbios_that_fails_ranks_first_seeds_and_drivers_do_not(tmp_path: Path) -> None:
    docs = vbios_fleet()
    root = _store(tmp_path, docs)
    done = run(root, "explain", "--same-setup", docs[0]["run_id"], "--status", "failed", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["runs"] == 40 and report["judged"] == 40
    top = report["findings"][0]
    assert top["fields"] == ["hardware.gpus.vbios_version"]
    assert top["extreme"] == VBIOS[1]
    by_value = {v["value"]: (v["bad"], v["n"]) for v in top["values"]}
    assert by_value == {VBIOS[1]: (11, 12), VBIOS[0]: (0, 28)}
    assert top["method"] == "Fisher exact"
    assert report["top"] == (
        f"runs with hardware.gpus.vbios_version {VBIOS[1]} failed in 11 of 12 runs; "
        f"with {VBIOS[0]} in 0 of 28"
    )
    for path in ("config.resolved_args.seed", "hardware.driver_version"):
        assert _finding(report, path)["adjusted_p"] > 0.5, path
    # seeds are recorded twice and split the runs alike: one finding
    assert _finding(report, "config.resolved_args.seed")["fields"] == [
        "config.resolved_args.seed",
        "training.seeds.seed",
    ]
    assert "association, not cause" in report["limits"][0]
    text = invoke(root, "explain", "--same-setup", docs[5]["run_id"], "--status", "failed")
    assert text.exit_code == 0, text.output
    assert report["top"] in text.output and "limits   association, not cause" in text.output


def test_the_status_section_reaches_the_index_as_facts(tmp_path: Path) -> None:
    root = _store(tmp_path, vbios_fleet())
    done = run(root, "runs", "--where", "status.state=failed", "--json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 11


def test_a_metric_shifted_by_nccl_ranks_nccl_first(tmp_path: Path) -> None:
    docs = nccl_fleet()
    root = _store(tmp_path, docs)
    done = invoke(
        root, "explain", "--metric", "final_loss", "--same-setup", docs[3]["run_id"], "--json"
    )
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    [top] = _significant(report)
    assert top["fields"] == ["hardware.nccl_version"]
    assert top["extreme"] == NCCL[1] and top["effect"] == 1.0  # every 2.23.4 run is worse
    assert top["difference"] == pytest.approx(0.3, abs=0.1)
    assert top["method"].startswith("permutation")
    # the same runs split bad/good by the loss, and by the worst half
    bad = invoke(
        root, "explain", "--bad", "final_loss>2.25", "--where", "training.algorithm=grpo", "--json"
    )
    assert bad.exit_code == 0, bad.output
    assert json.loads(bad.output)["findings"][0]["fields"] == ["hardware.nccl_version"]
    worst = invoke(
        root, "explain", "--metric", "final_loss", "--worst", "50%", "--same-setup",
        docs[0]["run_id"], "--json",
    )  # fmt: skip
    assert worst.exit_code == 0, worst.output
    top_worst = json.loads(worst.output)["findings"][0]
    assert top_worst["fields"] == ["hardware.nccl_version"] and top_worst["extreme"] == NCCL[1]


def test_a_driver_confounded_with_a_node_is_one_finding(tmp_path: Path) -> None:
    docs = confounded_fleet()
    root = _store(tmp_path, docs)
    done = invoke(
        root, "explain", "--metric", "final_loss", "--same-setup", docs[0]["run_id"], "--json"
    )
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    [top] = _significant(report)
    assert set(top["fields"]) == {
        "hardware.driver_version",
        "hardware.hostname",
        "runtime.nodes.fingerprint.driver_version",
        "runtime.nodes.fingerprint.hostname",
    }
    assert [f for f in report["findings"] if "hardware.hostname" in f["fields"]] == [top]


def test_a_fleet_without_a_cause_has_no_finding(tmp_path: Path) -> None:
    docs = null_fleet()
    root = _store(tmp_path, docs)
    done = invoke(
        root, "explain", "--metric", "final_loss", "--same-setup", docs[0]["run_id"], "--json"
    )
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert len(report["findings"]) >= 4  # vbios, driver, nccl, seed were all tested
    assert _significant(report) == []
    assert report["top"].startswith("no recorded field goes with final_loss")


def test_the_setup_pools_seeds_and_machines_and_nothing_else(tmp_path: Path) -> None:
    docs = vbios_fleet()[:6]
    other = fleet_doc(99, seed=1)
    other["config"]["resolved_args"]["lr"] = 0.001  # another experiment
    other["command"]["argv"][3] = "0.001"
    root = _store(tmp_path, [*docs, other])
    setups = {setup_of(manifest_of(d)) for d in docs}
    assert len(setups) == 1 and setup_of(manifest_of(other)) not in setups
    assert len({manifest_of(d).dna.value for d in docs if d}) > 1  # type: ignore[union-attr]
    with sqlite3.connect(root / "index.sqlite") as conn:
        stored = dict(conn.execute("SELECT run_id, setup FROM runs").fetchall())
    assert stored[docs[0]["run_id"]] == setups.pop() != stored[other["run_id"]]
    store = Store.open_for_reading(root)
    try:
        report = explain_runs(
            store, asked(None, None, None, "failed"), same_setup=docs[0]["run_id"]
        )
    finally:
        store.close()
    assert report.runs == 6


def _from_manifests(store: Store, run_ids: list[str]) -> dict[str, list[str]]:
    """Every varying field of these runs, from their stored manifests and listings: what
    the index's bulk read must give."""
    from expdna.digest.refs import ref_hex
    from expdna.store.record.flatten import flatten

    per_run: list[dict[str, str]] = []
    for run_id in run_ids:
        doc = store.show(run_id)
        held: dict[str, set[str]] = {}
        for path, value in flatten(doc)[0]:
            if not path.startswith(("status.", "collection.", "tracking.", "lineage.")):
                held.setdefault(path, set()).add(value)
        leaves = {path: "|".join(sorted(values)) for path, values in held.items()}
        digest = ref_hex(doc["environment"].get("packages_digest") or "")
        if digest is not None:
            for line in store.objects.read_verified(digest).decode().splitlines():
                name, _, version = line.partition("==")
                leaves[f"installed.{name}"] = version
        per_run.append(leaves)
    paths = sorted({path for leaves in per_run for path in leaves})
    columns = {path: [leaves.get(path, "(absent)") for leaves in per_run] for path in paths}
    return {path: column for path, column in columns.items() if len(set(column)) > 1}


def test_the_fleet_read_from_the_index_is_what_the_manifests_say(tmp_path: Path) -> None:
    from expdna.collectors.distributions import listing
    from expdna.digest import ref_of
    from expdna.store.explain import read_fleet

    docs = vbios_fleet()[:9]
    docs[1]["hardware"]["gpus"][1]["vbios_version"] = "94.00.00.00.07"  # two VBIOSes
    del docs[2]["hardware"]["nccl_version"]  # a run without the field
    docs[3]["config"]["resolved_args"]["output_dir"] = "/ckpt/elsewhere"  # an own fact
    listings = {}
    for i, torch in ((4, "2.11.0"), (5, "2.12.0"), (6, "2.12.0")):
        body = listing({"torch": torch, "numpy": "2.4.6"})
        docs[i]["environment"]["packages_digest"] = ref_of(body)
        listings[i] = body
    root = tmp_path / "store"
    store = Store.open(root)
    try:
        for i, doc in enumerate(docs):
            attached = [listings[i]] if i in listings else []
            assert store.record(manifest_of(doc), attachments=attached).status == "recorded"
        fleet = read_fleet(store, setup=setup_runs(store, docs[0]["run_id"]), state="failed")
        expected = _from_manifests(store, fleet.runs)
    finally:
        store.close()
    assert fleet.runs == [d["run_id"] for d in docs]
    assert {path: column.values() for path, column in fleet.fields.items()} == expected
    assert expected["hardware.gpus.vbios_version"][1] == "94.00.00.00.07|94.00.00.00.09"
    assert expected["hardware.nccl_version"][2] == "(absent)"
    assert expected["installed.torch"][4:7] == ["2.11.0", "2.12.0", "2.12.0"]
    assert fleet.outcome == [float(d["status"]["state"] == "failed") for d in docs]


_W = ["--where", "a.b=1"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--status", "exploded", *_W], "--status 'exploded'"),
        (["--bad", "loss>>1", *_W], "--bad 'loss>>1'"),
        (["--metric", "m", "--worst", "150%", *_W], "--worst '150%'"),
        (["--metric", "m", "--bad", "x>1", *_W], "names x, not --metric m"),
        (["--metric", "m", "--status", "failed", *_W], "without --metric"),
        (["--metric", "m", "--where", "=1"], "expected PATH=VALUE"),
        (["--metric", "m"], "--same-setup RUN or --where"),
        (["--metric", "", *_W], "--metric ''"),
        (["--bad", "m>1_0", *_W], "--bad 'm>1_0'"),
        (["--bad", "m>\uff12", *_W], "--bad 'm>\uff12'"),
        (["--bad", "m>nan", *_W], "--bad 'm>nan'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    done = invoke(tmp_path / "absent", "explain", *args)
    assert done.exit_code == 2, done.output
    assert message in done.output and len(done.output.strip().splitlines()) == 1
    assert not (tmp_path / "absent").exists()


def test_no_run_with_the_metric_is_a_negative_answer(tmp_path: Path) -> None:
    docs = vbios_fleet()[:5]
    root = _store(tmp_path, docs)
    done = invoke(root, "explain", "--metric", "nope", "--same-setup", docs[0]["run_id"])
    assert done.exit_code == 1 and "none of the 5 selected runs has nope" in done.output


def test_on_postgresql_the_vbios_ranks_first(pg_store: Store) -> None:
    docs = vbios_fleet()
    record_fleet(pg_store, docs)
    report = explain_runs(pg_store, asked(None, None, None, "failed"), same_setup=docs[0]["run_id"])
    assert report.findings[0].fields == ("hardware.gpus.vbios_version",)
    assert report.findings[0].q < ALPHA and report.runs == 40


def _explained(root: Path, ref: str, *args: str) -> tuple[int, dict[str, Any], str]:
    done = run(root, "explain", "--same-setup", ref, *args, "--json")
    # strict JSON: no NaN or Infinity, whatever the metrics were
    report = json.loads(done.stdout, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    return done.returncode, report, done.stderr


def test_runs_whose_loss_went_nan_are_bad_in_a_split(tmp_path: Path) -> None:
    # the VBIOS fleet, where the .09 runs diverged instead of failing: their loss is NaN
    docs = vbios_fleet()
    for doc in docs:
        doc["status"]["state"] = "completed"
        if doc["hardware"]["gpus"][0]["vbios_version"] == VBIOS[1]:
            doc["metrics"]["final_loss"] = float("nan")
    diverged = sum(d["hardware"]["gpus"][0]["vbios_version"] == VBIOS[1] for d in docs)
    root = _store(tmp_path, docs)
    code, report, _ = _explained(root, docs[0]["run_id"], "--bad", "final_loss>3")
    assert code == 0 and report["judged"] == 40
    top = report["findings"][0]
    assert top["fields"] == ["hardware.gpus.vbios_version"] and top["adjusted_p"] < ALPHA
    assert (VBIOS[1], diverged, diverged) in {(v["value"], v["n"], v["bad"]) for v in top["values"]}
    assert f"{diverged} runs have final_loss NaN: counted as bad" in report["limits"]
    # ranked, NaN has no place: left out, and said so
    code, report, _ = _explained(root, docs[0]["run_id"], "--metric", "final_loss")
    assert code == 0 and report["judged"] == 40 - diverged
    assert any(
        line.startswith(f"{diverged} runs have final_loss NaN: left out")
        for line in (report["limits"])
    )


def test_huge_metrics_give_strict_json_and_no_warning(tmp_path: Path) -> None:
    docs = [
        fleet_doc(i, seed=i % 4, nccl=NCCL[i % 2], final_loss=1e308 if i % 2 else -1e308)
        for i in range(20)
    ]
    root = _store(tmp_path, docs)
    code, report, stderr = _explained(root, docs[0]["run_id"], "--metric", "final_loss")
    assert code == 0 and stderr == ""
    top = report["findings"][0]
    assert top["fields"] == ["hardware.nccl_version"]
    assert sorted(v["centre"] for v in top["values"]) == [-1e308, 1e308]
    assert top["difference"] is None  # 2e308 is past the double range


def test_control_characters_in_values_are_escaped(tmp_path: Path) -> None:
    hosts = ["evil\x1b[2J\x1b[31mRED", "line1\nline2"]
    docs = [
        fleet_doc(i, seed=i % 4, host=hosts[i % 2], state="failed" if i % 2 else "completed")
        for i in range(20)
    ]
    root = _store(tmp_path, docs)
    done = run(root, "explain", "--same-setup", docs[0]["run_id"], "--status", "failed")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "line1\nline2" not in done.stdout
    assert "evil\\x1b[2J\\x1b[31mRED" in done.stdout and "line1\\nline2" in done.stdout
    # one table row per value, and the sentence on one line
    sentence = next(line for line in done.stdout.splitlines() if line.startswith("runs with"))
    assert sentence.startswith("runs with hardware.hostname line1\\nline2 failed in 10 of 10")


def test_a_split_with_no_bad_run_or_no_good_run_is_a_negative_answer(tmp_path: Path) -> None:
    docs = vbios_fleet()
    root = _store(tmp_path, docs)
    ref = docs[0]["run_id"]
    none_bad = run(root, "explain", "--same-setup", ref, "--bad", "final_loss>100")
    assert none_bad.returncode == 1
    assert "none of the 40 judged runs had final_loss>100" in none_bad.stderr
    all_bad = run(root, "explain", "--same-setup", ref, "--bad", "final_loss>0")
    assert all_bad.returncode == 1 and "all 40 judged runs had final_loss>0" in all_bad.stderr
    running = run(root, "explain", "--same-setup", ref, "--status", "running")
    assert running.returncode == 1 and "none of the 40 judged runs" in running.stderr


def test_worst_says_what_ties_made_of_the_share(tmp_path: Path) -> None:
    # 40 runs, 8 of them at the highest loss: the highest 10% is 4 runs, ties make it 8
    docs = [fleet_doc(i, seed=i % 4, final_loss=2.0 if i < 8 else 1.0) for i in range(40)]
    root = _store(tmp_path, docs)
    code, report, _ = _explained(
        root, docs[0]["run_id"], "--metric", "final_loss", "--worst", "10%"
    )
    assert code == 0 and report["findings"][0]["fields"][0] == "config.resolved_args.seed"
    assert "the highest 10% of final_loss: 8 of 40 runs, at or above 2" in report["limits"]
    assert "runs tied at the cut: 10% of 40 is 4, not 8" in report["limits"]


def test_a_value_that_reads_absent_is_not_the_absent_runs(tmp_path: Path) -> None:
    docs = [fleet_doc(i, seed=i % 4, state="failed" if i % 2 else "completed") for i in range(24)]
    for i, doc in enumerate(docs):
        if i % 2:
            del doc["hardware"]["nccl_version"]
        else:
            doc["hardware"]["nccl_version"] = "(absent)"
    root = _store(tmp_path, docs)
    code, report, _ = _explained(root, docs[0]["run_id"], "--status", "failed")
    assert code == 0
    found = _finding(report, "hardware.nccl_version")
    assert sorted((v["value"], v.get("absent", False), v["bad"]) for v in found["values"]) == [
        ("(absent)", False, 0),
        ("(absent)", True, 12),
    ]


def test_long_values_that_differ_at_the_end_are_told_apart(tmp_path: Path) -> None:
    builds = ["2.6.0a0+git1234567890abcdef1234567890ab-patched", "2.6.0a0+git1234567890ab-up"]
    docs = [fleet_doc(i, seed=i % 4, state="failed" if i % 2 else "completed") for i in range(20)]
    for i, doc in enumerate(docs):
        doc["environment"]["packages"]["torch"] = builds[i % 2]
    root = _store(tmp_path, docs)
    done = run(root, "explain", "--same-setup", docs[0]["run_id"], "--status", "failed")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    rows = [line for line in lines if "2.6.0a0" in line and not line.startswith("runs with")]
    shown = {row.split()[-5] if row.startswith("1 ") else row.split()[0] for row in rows}
    assert len(shown) == 2  # the long one cut in its middle, its end kept
    assert any(value.endswith("-patched") and "…" in value for value in shown)


def test_the_setup_digest_explain_prints_selects_the_setup(tmp_path: Path) -> None:
    docs = vbios_fleet()
    root = _store(tmp_path, docs)
    by_run = run(root, "explain", "--same-setup", docs[0]["run_id"], "--status", "failed")
    header = by_run.stdout.splitlines()[0]
    assert header.startswith("setup    ")
    shown = header.split()[1]
    by_setup = run(root, "explain", "--same-setup", shown, "--status", "failed")
    assert by_setup.returncode == 0 and by_setup.stdout == by_run.stdout
    missing = run(root, "explain", "--same-setup", "abcdef012345", "--status", "failed")
    assert missing.returncode == 1 and "abcdef012345" in missing.stderr


def test_runs_without_a_setup_digest_are_said_not_silently_dropped(tmp_path: Path) -> None:
    docs = vbios_fleet()
    root = _store(tmp_path, docs)
    with sqlite3.connect(root / "index.sqlite") as conn:  # as recorded before setup digests
        conn.execute("UPDATE runs SET setup = NULL WHERE run_id != ?", (docs[0]["run_id"],))
    code, report, _ = _explained(root, docs[0]["run_id"], "--status", "failed")
    assert code == 1 and report["runs"] == 1
    assert report["limits"][2].startswith("39 runs in the store have no setup digest")


def test_two_runs_on_two_drivers_are_too_few_not_per_run(tmp_path: Path) -> None:
    docs = [
        fleet_doc(i, seed=0, driver=DRIVERS[i], state="failed" if i else "completed")
        for i in range(2)
    ]
    root = _store(tmp_path, docs)
    code, report, _ = _explained(root, docs[0]["run_id"], "--status", "failed")
    assert code == 0 and "hardware.driver_version" in report["too_few_runs"]
    assert "hardware.driver_version" not in report["per_run_fields"]
