"""check and rerun on anyone's manifest, through the installed command on real git repos:
they verify what the DNA covers (command, code, config files, data) and run nothing else."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

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
    assert "rerun: applied 2 recorded variables; did not apply 10 (" in done.stderr


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
