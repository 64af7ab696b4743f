"""How runs end, through real processes and a real store: the hook's ``status`` section
(crash inside ``track``, crash after ``start`` alone, SIGKILL, SIGTERM), ``stability``
leaving unfinished runs out, and ``expdna run`` for a command that is not edited (its exit
code, a hooked child joining the run, metrics from ``$EXPDNA_METRICS_FILE``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.factories import EXPDNA

# One training script, three endings: the same setup (one DNA) for every run below.
TRAIN = """\
import argparse, os, sys, time
import expdna

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
out = os.environ["OUT"]
end = os.environ.get("END", "ok")  # not an argument: every ending is one setup, one DNA

if end == "start-only":
    run = expdna.start(args, output_dir=out)
    raise ValueError("bad batch: token=ghp_" + "a" * 36)
if end == "start-kill":  # recorded at start, with no SQLAlchemy in this process
    run = expdna.start(args, output_dir=out)
    print(run.run_id, any(m.startswith("sqlalchemy") for m in sys.modules), flush=True)
    os.kill(os.getpid(), 9)

with expdna.track(args, output_dir=out) as run:
    run.log_final(val_loss={"ok": 0.5, "crash": 9.0, "hang": 7.0}.get(end, 0.6))
    if end == "crash":
        raise RuntimeError("loss is NaN at step 3")
    if end == "hang":
        print("ready", run.run_id, flush=True)
        time.sleep(60)
"""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    env.update(
        EXPDNA_STORE=str(tmp_path / "store"),
        EXPDNA_CACHE_DIR=str(tmp_path / "cache"),
        OUT=str(tmp_path / "out"),
    )
    env.update(extra)
    return env


def expdna(tmp_path: Path, cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXPDNA, *args],
        cwd=cwd,
        env=_env(tmp_path, **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )


def train(tmp_path: Path, repo: Path, end: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "train.py"],
        cwd=repo,
        env=_env(tmp_path, END=end),
        capture_output=True,
        text=True,
        timeout=120,
    )


def manifests(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """Run id -> manifest document, of every file in the output directory."""
    docs = [json.loads(p.read_text()) for p in sorted((tmp_path / "out").glob("manifest_*.json"))]
    return {doc["run_id"]: doc for doc in docs}


def runs(tmp_path: Path, repo: Path, *args: str, **extra: str) -> list[dict[str, Any]]:
    done = expdna(tmp_path, repo, "runs", "--json", *args, **extra)
    assert done.returncode in (0, 1), done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)
    return found


def _hooked_repo(repo: Path) -> Path:
    (repo / "train.py").write_text(TRAIN)
    subprocess.run(["git", "commit", "-qam", "hooked"], cwd=repo, check=True)
    return repo


def test_each_ending_is_recorded_and_only_completed_runs_pool(repo: Path, tmp_path: Path) -> None:
    _hooked_repo(repo)
    assert train(tmp_path, repo, "ok").returncode == 0
    crashed = train(tmp_path, repo, "crash")
    assert crashed.returncode == 1 and "loss is NaN at step 3" in crashed.stderr
    alone = train(tmp_path, repo, "start-only")
    assert alone.returncode == 1 and "bad batch" in alone.stderr

    docs = manifests(tmp_path)
    assert len(docs) == 3
    by_state = {doc["status"]["state"]: doc for doc in docs.values()}
    assert set(by_state) == {"completed", "failed"} and len(docs) == 3
    failed = [d for d in docs.values() if d["status"]["state"] == "failed"]
    errors = sorted((d["status"]["error"]["type"], d["status"]["error"]["message"]) for d in failed)
    assert errors[0] == ("RuntimeError", "loss is NaN at step 3")
    # start() without add_runtime or finish: the exit hook wrote it, redacted.
    assert errors[1][0] == "ValueError" and "a" * 36 not in errors[1][1]
    for doc in docs.values():
        status = doc["status"]
        assert status["ended_at"] and status["duration_s"] >= 0
        assert status["peak_rss_bytes"] > 0 and status["started_at"].endswith("Z")
        assert "status" not in doc["dna"]["sections"]
    assert len({doc["dna"]["value"] for doc in docs.values()}) == 1  # one setup

    # The store holds all three, each with its state, selectable with --where.
    listed = {r["run_id"]: r["state"] for r in runs(tmp_path, repo)}
    assert listed == {rid: doc["status"]["state"] for rid, doc in docs.items()}
    # twins reads through the stdlib read layer (expdna.store.index.read): the same states
    twins = json.loads(expdna(tmp_path, repo, "twins", "--json", next(iter(docs))).stdout)
    assert {r["run_id"]: r["state"] for r in twins} == listed
    failed_ids = {r["run_id"] for r in runs(tmp_path, repo, "--where", "status.state=failed")}
    assert failed_ids == {d["run_id"] for d in failed}
    by_type = runs(tmp_path, repo, "--where", "status.error.type=RuntimeError")
    crash_id = next(d["run_id"] for d in failed if d["status"]["error"]["type"] == "RuntimeError")
    assert [r["run_id"] for r in by_type] == [crash_id]
    # recorded by start() while running (the store existed); its end came as a status entry
    assert "state      failed" in expdna(tmp_path, repo, "show", crash_id).stdout

    # stability: the completed run alone; the failed ones are named as left out.
    dna = next(iter(docs.values()))["dna"]["value"]
    spread = expdna(tmp_path, repo, "stability", "--json", dna[:12])
    assert spread.returncode == 0, spread.stderr
    report = json.loads(spread.stdout)
    assert report["metrics"]["val_loss"] == {
        "n": 1,
        "mean": 0.5,
        "std": None,
        "min": 0.5,
        "max": 0.5,
        "cv": None,
    }
    assert sorted(report["left_out"].values()) == ["failed", "failed"]
    wide = json.loads(
        expdna(tmp_path, repo, "stability", "--json", "--include-failed", dna[:12]).stdout
    )
    assert wide["metrics"]["val_loss"]["n"] == 2 and wide["left_out"] == {}
    text = expdna(tmp_path, repo, "stability", dna[:12]).stdout
    assert "left out 2 not completed (failed; --include-failed pools them)" in text


def _wait_recorded(tmp_path: Path, repo: Path, proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("ready"), line
    return line.split()[1]


def test_a_killed_run_stays_running_and_shows_unfinished(repo: Path, tmp_path: Path) -> None:
    _hooked_repo(repo)
    env = _env(tmp_path, END="hang")
    killed = subprocess.Popen(
        [sys.executable, "train.py"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    run_id = _wait_recorded(tmp_path, repo, killed)
    killed.send_signal(signal.SIGKILL)
    killed.wait(30)
    # start() alone, then SIGKILL: the store exists now, and start() recorded the run.
    bare = train(tmp_path, repo, "start-kill")
    assert bare.returncode == -signal.SIGKILL, bare.stderr
    bare_id, sqlalchemy = bare.stdout.split()
    assert sqlalchemy == "False"
    # expdna run passes SIGTERM on to the hooked command (which joined its run) and exits
    # as a shell reports a death by signal.
    termed = subprocess.Popen(
        [EXPDNA, "run", "--record", "--output-dir", env["OUT"], "--", "python", "train.py"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    term_id = _wait_recorded(tmp_path, repo, termed)
    termed.send_signal(signal.SIGTERM)
    assert termed.wait(30) == 128 + signal.SIGTERM

    docs = manifests(tmp_path)
    for killed_id in (run_id, bare_id):
        assert docs[killed_id]["status"]["state"] == "running"
        assert docs[killed_id]["status"]["ended_at"] is None
    assert docs[term_id]["status"]["state"] == "interrupted"
    assert docs[term_id]["status"]["signal"] == "SIGTERM"

    states = {r["run_id"]: (r["state"], r["unfinished"]) for r in runs(tmp_path, repo)}
    assert states == {
        run_id: ("running", False),
        bare_id: ("running", False),
        term_id: ("interrupted", False),
    }
    time.sleep(0.2)
    old = {
        r["run_id"]: r["unfinished"] for r in runs(tmp_path, repo, EXPDNA_UNFINISHED_AFTER="0.1")
    }
    assert old == {run_id: True, bare_id: True, term_id: False}
    table = expdna(tmp_path, repo, "runs", EXPDNA_UNFINISHED_AFTER="0.1").stdout
    shown = sorted(line.split()[3] for line in table.splitlines()[1:])
    assert shown == ["interrupted", "unfinished", "unfinished"]
    fsck = expdna(tmp_path, repo, "fsck", "--json", EXPDNA_UNFINISHED_AFTER="0.1")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert sorted(json.loads(fsck.stdout)["unfinished"]) == sorted([run_id, bare_id])

    # The killed runs are not pooled: no completed run of their DNA has reported a metric.
    # `expdna run -- python train.py` is the same setup as the hook's `python train.py`:
    # one DNA, whichever path recorded it.
    dna = docs[run_id]["dna"]["value"]
    assert docs[bare_id]["dna"]["value"] == docs[term_id]["dna"]["value"] == dna
    spread = expdna(tmp_path, repo, "stability", "--json", dna[:12])
    assert spread.returncode == 1
    assert json.loads(spread.stdout)["left_out"] == {
        run_id: "running",
        bare_id: "running",
        term_id: "interrupted",
    }


def test_expdna_run_records_the_exit_code_of_an_unedited_command(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "fails.py").write_text(
        "import json, os, sys\n"
        "metrics = {'val_loss': 1.25, 'note': 'diverged'}\n"
        "json.dump(metrics, open(os.environ['EXPDNA_METRICS_FILE'], 'w'))\n"
        "print('training', os.environ['EXPDNA_RUN_ID'])\n"
        "sys.exit(3)\n"
    )
    done = expdna(
        tmp_path,
        repo,
        "run",
        "--record",
        "--output-dir",
        "out",
        "--json",
        "--",
        "python",
        "fails.py",
        "--lr",
        "0.1",
    )
    assert done.returncode == 3, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("training ")
    answer = json.loads("\n".join(lines[1:]))
    assert answer["status"]["state"] == "failed" and answer["status"]["exit_code"] == 3
    assert answer["status"]["peak_rss_bytes"] > 0
    doc = json.loads(Path(answer["path"]).read_text())
    assert doc["run_id"] == answer["run_id"] == lines[0].split()[1]
    assert doc["status"]["state"] == "failed" and doc["metrics"]["val_loss"] == 1.25
    assert doc["config"]["resolved_args"]["lr"] in (0.1, "0.1")

    found = runs(tmp_path, repo, "--where", "status.state=failed")
    assert [r["run_id"] for r in found] == [doc["run_id"]]
    assert runs(tmp_path, repo, "--where", "status.exit_code=3")[0]["run_id"] == doc["run_id"]

    missing = expdna(tmp_path, repo, "run", "--output-dir", "out", "--", "no-such-command-xyz")
    assert missing.returncode == 127
    assert expdna(tmp_path, repo, "run").returncode == 2


def test_a_hooked_child_joins_the_run(repo: Path, tmp_path: Path) -> None:
    _hooked_repo(repo)
    done = expdna(
        tmp_path,
        repo,
        "run",
        "--record",
        "--output-dir",
        str(tmp_path / "run-out"),
        "--",
        "python",
        "train.py",
    )
    assert done.returncode == 0, done.stderr
    assert manifests(tmp_path) == {}  # the hook wrote no manifest of its own
    files = list((tmp_path / "run-out").glob("manifest_*.json"))
    assert len(files) == 1
    doc = json.loads(files[0].read_text())
    assert doc["status"]["state"] == "completed" and doc["status"]["exit_code"] == 0
    assert doc["metrics"] == {"val_loss": 0.5}
    listed = runs(tmp_path, repo)
    assert [r["run_id"] for r in listed] == [doc["run_id"]]
    stored = expdna(tmp_path, repo, "show", "--manifest", doc["run_id"])
    assert json.loads(stored.stdout)["metrics"] == {"val_loss": 0.5}


def test_a_manifest_without_status_reads_as_unknown(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "old.json"
    done = expdna(
        tmp_path, repo, "generate", "--record", "--output", str(out), "--", "python", "train.py"
    )
    assert done.returncode == 0, done.stderr
    assert "status" not in json.loads(out.read_text())
    (row,) = runs(tmp_path, repo)
    assert row["state"] is None and row["unfinished"] is False
    assert expdna(tmp_path, repo, "runs").stdout.splitlines()[1].split()[3] == "unknown"
    assert runs(tmp_path, repo, "--where", "status.state=failed") == []


def test_an_output_dir_that_cannot_be_made_is_one_error_line(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a directory\n")
    out = tmp_path / "afile" / "out"
    done = expdna(tmp_path, repo, "run", "--output-dir", str(out), "--", "touch", "ran")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"expdna: error: --output-dir {out}: cannot be created: Not a directory"
    ]
    assert not (repo / "ran").exists()


def test_a_store_that_refuses_the_run_leaves_the_commands_exit_code(
    repo: Path, tmp_path: Path
) -> None:
    (tmp_path / "not-a-store").write_text("a file where the store should be\n")
    out = tmp_path / "run-out"
    done = expdna(
        tmp_path,
        repo,
        "run",
        "--record",
        "--json",
        "--output-dir",
        str(out),
        "--",
        "python",
        "-c",
        "raise SystemExit(3)",
        EXPDNA_STORE=str(tmp_path / "not-a-store"),
    )
    assert done.returncode == 3, done.stderr
    [path] = out.glob("manifest_*.json")
    refused = [line for line in done.stderr.splitlines() if "not recorded" in line]
    assert refused == [
        f"expdna: error: not recorded: {tmp_path / 'not-a-store'}: cannot create the store: "
        f"File exists (`expdna record {path}` records it later)"
    ]
    assert json.loads(done.stdout)["status"]["state"] == "failed"
    assert json.loads(path.read_text())["status"]["exit_code"] == 3


PINS = """\
import expdna
from pathlib import Path

with expdna.track(None) as run:
    Path("ckpt.pt").write_bytes(b"weights")
    run.pin("ckpt.pt")
"""


def _committed(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "add " + ", ".join(files)], cwd=repo, check=True)


def _run_recorded(tmp_path: Path, repo: Path, out: Path, script: str, **env: str) -> Any:
    """``expdna run --record`` of ``python SCRIPT`` writing into ``out``."""
    return expdna(
        tmp_path, repo, "run", "--record", "--output-dir", str(out), "--", "python", script, **env
    )


def test_a_joined_script_says_how_to_pin_and_that_way_works(repo: Path, tmp_path: Path) -> None:
    _committed(repo, {"pins.py": PINS, ".gitignore": "ckpt.pt\n"})
    done = _run_recorded(tmp_path, repo, tmp_path / "run-out", "pins.py")
    assert done.returncode == 0, done.stderr
    # the store is configured ($EXPDNA_STORE): the warning must not say it is not
    assert "no store configured" not in done.stderr
    [line] = [x for x in done.stderr.splitlines() if "joined the run" in x]
    suggested = line[line.index("expdna pin ") :].split()[1:]
    assert suggested[:2] == ["pin", "--run"]
    assert expdna(tmp_path, repo, "which", "ckpt.pt").returncode == 1  # nothing pinned yet
    assert expdna(tmp_path, repo, *suggested).returncode == 0
    found = expdna(tmp_path, repo, "which", "--json", "ckpt.pt")
    assert found.returncode == 0 and suggested[2] in found.stdout


IN_CODE = """\
import os
import expdna

with expdna.track({"lr": float(os.environ["LR"])}, output_dir="o") as run:
    run.log_final(loss=1.0)
"""


def test_settings_handed_over_in_code_count_in_a_joined_run(repo: Path, tmp_path: Path) -> None:
    _committed(repo, {"in_code.py": IN_CODE})
    docs = []
    for lr, out in (("0.01", "a"), ("0.1", "b"), ("0.1", "c")):
        done = _run_recorded(tmp_path, repo, tmp_path / out, "in_code.py", LR=lr)
        assert done.returncode == 0, done.stderr
        [path] = (tmp_path / out).glob("manifest_*.json")
        docs.append(json.loads(path.read_text()))
    assert [d["config"]["resolved_args"] for d in docs] == [{"lr": 0.01}, {"lr": 0.1}, {"lr": 0.1}]
    assert all(d["config"]["settings_source"] == "code" for d in docs)
    dnas = [d["dna"]["value"] for d in docs]
    assert dnas[0] != dnas[1] == dnas[2]  # two settings, two DNAs; the same one, one
    stored = {r["run_id"]: r["dna"] for r in runs(tmp_path, repo)}
    assert stored == {d["run_id"]: d["dna"]["value"] for d in docs}


def test_stability_of_a_dna_whose_runs_all_failed_says_so(repo: Path, tmp_path: Path) -> None:
    _hooked_repo(repo)
    crashed = train(tmp_path, repo, "crash")
    assert crashed.returncode == 1
    [doc] = manifests(tmp_path).values()
    done = expdna(tmp_path, repo, "stability", doc["dna"]["value"][:12])
    assert done.returncode == 1
    assert done.stderr.strip().endswith(
        f"no completed run of DNA {doc['dna']['value'][:12]}: 1 left out (failed; "
        "--include-failed pools them)"
    )
