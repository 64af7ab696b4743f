"""check and rerun on anyone's manifest, through the installed command on real git repos:
they verify what the DNA covers (command, code, config files, data) and run nothing else."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_compare_cli import committed, expdna, generate
from tests.integration.test_compare_cli import out as out  # the fixture
from tests.integration.test_hostile_rerun import resealed

#: The variables the issue found applied; none of them may reach the child.
NOT_APPLIED = {
    "CUDA_INJECTION64_PATH": "/tmp/evil/libinject.so",
    "NCCL_NET_PLUGIN": "evil",
    "NCCL_TUNER_PLUGIN": "evil",
    "HF_ENDPOINT": "https://hub.evil.example",
    "HF_HUB_CACHE": "/tmp/evil/hub",
    "HF_DATASETS_TRUST_REMOTE_CODE": "1",
    "RAY_ADDRESS": "ray.evil.example:6379",
    "RAY_JOB_CONFIG_JSON_ENV_VAR": '{"runtime_env": {"py_modules": ["/tmp/evil"]}}',
    "RAY_RUNTIME_ENV_PLUGINS": '[{"class": "evil.Plugin"}]',
    "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1",
}
SHOW_ENV = "import json, os\nprint(json.dumps({k: os.environ.get(k) for k in os.environ}))\n"


def marker_script(repo: Path, marker: Path) -> str:
    return committed(repo, "mark.py", f"open({str(marker)!r}, 'w').write('ran')\n")


def refusals(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "refusing to rerun" in line]


def test_a_swapped_argv_is_refused(repo: Path, out: Path, tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    manifest = generate(repo, out / "m.json", "python", "train.py", "--lr", "0.1")
    dna = json.loads(manifest.read_text())["dna"]["value"]

    def swap(doc: dict[str, Any]) -> None:
        doc["command"]["argv"] = ["bash", "-c", f"touch {marker}", "--lr", "0.1"]

    doc = json.loads(manifest.read_text())
    swap(doc)
    manifest.write_text(json.dumps(doc))
    if json.loads(manifest.read_text())["dna"]["version"] >= 3:  # the DNA covers argv
        check = expdna("check", manifest, cwd=repo)
        assert check.returncode == 1 and "FAIL dna:" in check.stdout
    else:  # versions 1 and 2: the same DNA, the entry is no recorded code
        check = expdna("check", manifest, cwd=repo)
        assert check.returncode == 1, check.stdout
        assert "FAIL command.entry: bash -> (absent) (bash is a program on PATH" in check.stdout
    for flags in ([], ["--trust-command"]):
        done = expdna("rerun", manifest, "--confirm", *flags, cwd=repo)
        assert done.returncode != 0, done.stderr
        assert not marker.exists()
    assert json.loads(manifest.read_text())["dna"]["value"] == dna

    # Another value for a recorded argument: argv no longer matches the recorded config.
    changed = resealed(
        generate(repo, out / "n.json", "python", "train.py", "--lr", "0.1"),
        lambda d: d["command"].update(argv=["python", "train.py", "--lr", "0.2"]),
    )
    check = expdna("check", changed, cwd=repo)
    assert check.returncode == 1
    assert (
        "FAIL command.argv: does not match config.resolved_args: lr: argv says 0.2, "
        "the config 0.1" in check.stdout
    ) or "FAIL dna:" in check.stdout
    done = expdna("rerun", changed, "--confirm", cwd=repo)
    assert done.returncode == 1 and refusals(done.stderr), done.stderr


def test_each_variable_is_shown_and_not_applied(repo: Path, out: Path) -> None:
    manifest = generate(repo, out / "m.json", "python", committed(repo, "env.py", SHOW_ENV))
    env = {**NOT_APPLIED, "NCCL_ALGO": "Tree", "PYTHONHASHSEED": "7"}
    resealed(manifest, lambda doc: doc["config"]["selected_env"].update(env))

    script = expdna("rerun", manifest, "--dry-run", cwd=repo).stdout
    for name in NOT_APPLIED:
        assert f"# NOT APPLIED: {name} is in the manifest, but it " in script, name
        assert f"\nexport {name}=" not in script
    assert "\nexport NCCL_ALGO=Tree\n" in script and "\nexport PYTHONHASHSEED=7\n" in script

    done = expdna("rerun", manifest, "--confirm", "--trust-command", cwd=repo)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert {name: seen.get(name) for name in NOT_APPLIED} == dict.fromkeys(NOT_APPLIED)
    assert (seen["NCCL_ALGO"], seen["PYTHONHASHSEED"]) == ("Tree", "7")
    # the count also holds variables the test process has (a local Ray sets RAY_*)
    assert "rerun: applied 2 recorded variables; did not apply " in done.stderr
    assert all(name in done.stderr for name in NOT_APPLIED)


def test_a_manifest_without_code_is_refused(repo: Path, out: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    manifest = generate(repo, out / "m.json", "python", marker_script(repo, marker))
    resealed(manifest, lambda doc: doc.update(code={}))
    check = expdna("check", manifest, cwd=repo)
    assert check.returncode == 1
    assert "FAIL code: the manifest records no code to run" in check.stdout
    done = expdna("rerun", manifest, "--confirm", "--trust-command", cwd=repo)
    assert done.returncode == 1
    assert "expdna: error: refusing to rerun: code: the manifest records no code to run" in (
        refusals(done.stderr)
    )
    assert not marker.exists()


def test_an_entry_script_outside_the_recorded_repositories_is_refused(
    repo: Path, out: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    outside = tmp_path / "outside.py"
    outside.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    manifest = generate(repo, out / "m.json", "python", str(outside))
    check = expdna("check", manifest, cwd=repo)
    assert check.returncode == 1
    [line] = [ln for ln in check.stdout.splitlines() if ln.startswith("FAIL command.entry")]
    assert line.endswith("(not inside a recorded repository: unrecorded code)")
    done = expdna("rerun", manifest, "--confirm", "--trust-command", cwd=repo)
    assert done.returncode == 1
    [line] = refusals(done.stderr)  # one line per reason, only this one
    assert line.startswith("expdna: error: refusing to rerun: command.entry: "), line
    assert not marker.exists()

    # -c is no recorded file either; a git-ignored script in the checkout is in no patch.
    inline = generate(repo, out / "c.json", sys.executable, "-c", "print(1)")
    check = expdna("check", inline, cwd=repo)
    assert "FAIL command.entry: the command runs inline code (-c), no file" in check.stdout
    committed(repo, ".gitignore", "scratch/\n")
    (repo / "scratch").mkdir()
    (repo / "scratch" / "t.py").write_text("print(1)\n")
    ignored = generate(repo, out / "i.json", "python", "scratch/t.py")
    check = expdna("check", ignored, cwd=repo)
    assert "ignored by git in proj, so no recorded patch holds it" in check.stdout


def test_an_edited_shared_config_file_and_dataset_fail_check(
    repo: Path, out: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "team" / "configs"
    shared.mkdir(parents=True)
    config = shared / "exp.yaml"
    config.write_text("lr: 0.1\nmodel:\n  depth: 2\n  width: 64\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.bin").write_bytes(b"a" * 100)
    (data / "b.bin").write_bytes(b"b" * 100)
    cache = {"EXPDNA_CACHE_DIR": str(tmp_path / "cache")}
    manifest = out / "m.json"
    done = expdna(
        "generate", "--deadline", "60", "-o", manifest, "--data", data, "--",
        "python", "train.py", "--config", config, cwd=repo, env=cache,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    check = expdna("check", manifest, cwd=repo, env=cache)
    assert check.returncode == 0, check.stdout
    assert f"PASS config.config_files.{config}: " in check.stdout
    assert f"PASS data.{data}: " in check.stdout

    config.write_text("lr: 0.2\nmodel:\n  depth: 3\n  width: 64\n")
    (data / "b.bin").write_bytes(b"B" * 100)
    check = expdna("check", manifest, cwd=repo, env=cache)
    assert check.returncode == 1
    [line] = [ln for ln in check.stdout.splitlines() if ln.startswith("FAIL config.")]
    assert line.startswith(f"FAIL config.config_files.{config}: blake3:")
    assert line.endswith(f"(changed at {config}; changed keys: lr, model.depth)")
    [line] = [ln for ln in check.stdout.splitlines() if ln.startswith("FAIL data.")]
    assert line.startswith(f"FAIL data.{data}: blake3:") and "changed b.bin" in line

    skipped = expdna("check", "--no-data", manifest, cwd=repo, env=cache)
    assert "data." not in skipped.stdout and "FAIL config." in skipped.stdout
    config.unlink()
    check = expdna("check", "--no-data", manifest, cwd=repo, env=cache)
    assert f"FAIL config.config_files.{config}: " in check.stdout
    assert "-> (absent) (config file not found here)" in check.stdout


HOOK = """
import argparse, sys
import expdna

parser = argparse.ArgumentParser()
parser.add_argument("--output-dir", required=True)
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
with expdna.track(output_dir=args.output_dir) as run:
    run.log_final(loss=args.lr)
print("trained", args.lr, sys.executable)
"""


def test_a_hook_manifest_reruns(repo: Path, out: Path, tmp_path: Path) -> None:
    import subprocess

    runs = tmp_path / "runs"
    script = committed(repo, "train_hook.py", HOOK)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    env["EXPDNA_CACHE_DIR"] = str(tmp_path / "cache")
    first = subprocess.run(
        [sys.executable, script, "--output-dir", str(runs), "--lr", "0.5"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    [manifest] = sorted(runs.iterdir())
    argv = json.loads(manifest.read_text())["command"]["argv"]
    assert argv[1:] == [script, "--output-dir", str(runs), "--lr", "0.5"], argv

    script_text = expdna("rerun", manifest, "--dry-run", cwd=repo, env=env).stdout
    assert (
        script_text.rstrip("\n").splitlines()[-1].endswith(f"{script} --output-dir {runs} --lr 0.5")
    )
    done = expdna("rerun", manifest, "--confirm", "--trust-command", cwd=repo, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("trained 0.5 "), done.stdout
    assert len(list(runs.iterdir())) == 2  # the rerun recorded itself


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torchrun_tiny.py"


@pytest.mark.slow  # torch starts in two processes, twice
def test_a_torchrun_manifest_reruns_with_both_ranks(repo: Path, tmp_path: Path) -> None:
    import subprocess

    runs = tmp_path / "runs"
    script = committed(repo, "ddp.py", EXAMPLE.read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    env.update(EXPDNA_CACHE_DIR=str(tmp_path / "cache"), OMP_NUM_THREADS="1")
    env["PYTHONWARNINGS"] = "ignore"
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    first = subprocess.run(
        [*launcher, "--nproc-per-node", "2", script, "--output-dir", str(runs)],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    [manifest] = sorted(runs.iterdir())
    argv = json.loads(manifest.read_text())["command"]["argv"]
    assert "--nproc-per-node" in argv and script in argv, argv

    done = expdna("rerun", manifest, "--confirm", "--trust-command", cwd=repo, env=env)
    assert done.returncode == 0, done.stderr
    ranks = sorted(json.loads(line)["rank"] for line in done.stdout.splitlines() if "{" in line)
    assert ranks == [0, 1], done.stdout
    assert len(list(runs.iterdir())) == 2


def test_rendezvous_values_are_left_to_the_user(repo: Path, out: Path) -> None:
    argv = [
        "torchrun", "--nnodes", "2", "--nproc-per-node", "1", "--node-rank", "0",
        "--master-addr", "trainer-0.example", "--master-port=29500", "train.py", "--lr", "1",
    ]  # fmt: skip
    manifest = generate(repo, out / "m.json", *argv)
    script = expdna("rerun", manifest, "--dry-run", cwd=repo).stdout
    lines = script.rstrip("\n").splitlines()
    assert lines[-1] == (
        'torchrun --nnodes 2 --nproc-per-node 1 --node-rank "$NODE_RANK" --master-addr '
        '"$MASTER_ADDR" --master-port="$MASTER_PORT" train.py --lr 1'
    )
    assert "#   MASTER_ADDR: --master-addr (recorded: trainer-0.example)" in lines
    assert ': "${MASTER_PORT:?set MASTER_PORT for this allocation}"' in lines
    done = expdna("rerun", manifest, "--confirm", "--trust-command", cwd=repo)
    assert done.returncode == 1
    assert refusals(done.stderr)[-1].endswith(
        "set NODE_RANK, MASTER_ADDR, MASTER_PORT for this allocation (see rerun --dry-run)"
    )


def test_a_dna_prefix_of_runs_with_different_commands_is_ambiguous(
    repo: Path, out: Path, tmp_path: Path
) -> None:
    store = {"EXPDNA_STORE": str(tmp_path / "store")}
    a = generate(repo, out / "a.json", "python", "train.py", env=store)
    b = generate(repo, out / "b.json", "python", "./train.py", env=store)
    dna = json.loads(a.read_text())["dna"]["value"]
    assert json.loads(b.read_text())["dna"]["value"] == dna
    for m in (a, b):
        assert expdna("record", m, cwd=repo, env=store).returncode == 0
    done = expdna("rerun", dna[:12], "--dry-run", cwd=repo, env=store)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert f"{dna[:12]}: ambiguous: 2 runs of this DNA with 2 different commands" in line
    for m in (a, b):
        run_id = json.loads(m.read_text())["run_id"]
        assert run_id in line
    assert "python train.py" in line and "python ./train.py" in line
    one = json.loads(a.read_text())["run_id"]
    assert expdna("rerun", one, "--dry-run", cwd=repo, env=store).returncode == 0


def test_an_entry_outside_git_is_checked_against_its_unversioned_tree(tmp_path: Path) -> None:
    folder = tmp_path / "scratch"
    folder.mkdir()
    (folder / "train.py").write_text("print('training')\n")
    manifest = generate(folder, tmp_path / "m.json", "python", "train.py", "--lr", "0.1")
    doc = json.loads(manifest.read_text())
    assert doc["code"]["scratch"]["unversioned"] is True
    check = expdna("check", manifest, cwd=folder)
    assert "PASS command.entry: train.py" in check.stdout, check.stdout
    assert "in unversioned tree scratch" in check.stdout

    (folder / "train.py").write_text("print('something else')\n")
    check = expdna("check", manifest, cwd=folder)
    assert check.returncode == 1
    assert "FAIL command.entry: train.py" in check.stdout, check.stdout
    assert "changed since it was recorded in unversioned tree scratch" in check.stdout
    done = expdna("rerun", manifest, "--confirm", cwd=folder)
    assert done.returncode == 1 and "training" not in done.stdout
