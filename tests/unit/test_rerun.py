"""rerun: the dry-run script quotes every word, flags redacted values, runs nothing."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from expdna.cli import cli
from expdna.compare.check import CheckReport, CheckResult
from expdna.compare.rerun import (
    LaunchError,
    redacted_inputs,
    refusal_reasons,
    render_script,
    rerun_confirmed,
    run_recorded,
)
from expdna.errors import RefusedError
from expdna.manifest.dna import compute_dna, short
from expdna.manifest.io import write_manifest
from expdna.manifest.model import Manifest

COMMIT = "1c8e2fb" + "0" * 33
NASTY = [
    "a b",
    "it's",
    'say "hi"',
    "$(rm -rf /)",
    "`id`",
    "semi;colon && echo pwned > MARKER",
    "$HOME",
    "back\\slash",
    "new\nline",
    "",
    "*",
    "ünïcode",
    "--flag=$(echo pwned > MARKER)",
]
PASSED = CheckReport(())


def make(argv: list[str] | None = None, **sections: Any) -> Manifest:
    manifest = Manifest.model_validate(
        {
            "schema_version": "1.0",
            "run_id": "20260805_143025_1c8e2fb_k3f9",
            "generated_at": "2026-08-05T14:30:25Z",
            "command": {"argv": argv if argv is not None else [], "cwd": "/work/relax"},
            **sections,
        }
    )
    manifest.dna = compute_dna(manifest)
    return manifest


def command_lines(script: str) -> list[str]:
    return [line for line in script.splitlines() if line and not line.startswith("#")]


def run_script(script: str, tmp_path: Path) -> list[str]:
    """Run ``script`` under /bin/sh with ``python`` replaced by a function printing its words.

    PATH is empty, so a word that escaped its quotes could not even find ``rm``; printf and
    the redirections a broken quote would expose are builtins, caught by the MARKER check.
    """
    path = tmp_path / "rerun.sh"
    path.write_text(
        "python() { printf '%s\\0' \"$@\"; printf 'ENV=%s\\0' \"$NCCL_ALGO\"; }\n" + script
    )
    done = subprocess.run(
        ["/bin/sh", str(path)], cwd=tmp_path, env={"PATH": ""}, capture_output=True, check=True
    )
    assert not (tmp_path / "MARKER").exists()
    return done.stdout.decode("utf-8").split("\0")[:-1]


def test_every_word_survives_the_shell(tmp_path: Path) -> None:
    argv = ["python", "train.py", *NASTY]
    env = {"NCCL_ALGO": "/data/hf cache/$(echo pwned > MARKER)'\""}
    script = render_script(make(argv, config={"selected_env": env}))
    subprocess.run(["/bin/sh", "-n"], input=script.encode(), check=True)
    assert run_script(script, tmp_path) == [*argv[1:], f"ENV={env['NCCL_ALGO']}"]


def test_command_line_is_shlex_join(tmp_path: Path) -> None:
    argv = ["python", "train.py", *NASTY]
    script = render_script(make(argv))
    assert shlex.join(argv) in script
    assert "export" not in script


def test_header_and_environment() -> None:
    env = {"NCCL_ALGO": "Ring", "NCCL_DEBUG": "INFO"}
    manifest = make(["python", "train.py"], config={"selected_env": env})
    script = render_script(manifest)
    assert script.startswith("#!/bin/sh\n")
    assert "# run:          20260805_143025_1c8e2fb_k3f9" in script
    assert manifest.dna is not None and f"# dna:          {short(manifest.dna.value)}" in script
    assert "# generated_at: 2026-08-05T14:30:25Z" in script
    assert "# cd /work/relax" in script
    assert command_lines(script) == ["export NCCL_ALGO=Ring", "python train.py"]
    assert "# NOT APPLIED: NCCL_DEBUG is in the manifest, but it is not on the allow-list" in script


def test_expected_code_and_inline_patch(tmp_path: Path) -> None:
    patch_text = "diff --git a/x b/x\n+echo $(pwned)\n+tab\there\r\n+last\n"
    code = {
        "relax": {
            "commit": COMMIT,
            "branch": "main",
            "dirty": True,
            "patch": {"digest": "blake3:" + "c" * 64, "size": 42, "text": patch_text},
        },
        "megatron": {"commit": "2" * 40, "branch": None, "detached": True, "dirty": False},
    }
    script = render_script(make(["python", "t.py"], code=code))
    assert (
        f"# expected: relax at {COMMIT} (branch main), dirty: patch blake3:{'c' * 64} below"
        in script
    )
    assert f"# expected: megatron at {'2' * 40} (detached), clean" in script
    assert "#   patch blake3:" + "c" * 64 + ", 42 bytes" in script
    assert command_lines(script) == ["python t.py"]  # the patch is comments only
    # The patch cuts back out of the script byte for byte, as the comment says.
    (tmp_path / "s.sh").write_text(script)
    out = subprocess.run(
        ["sed", "-n", r"/^# begin patch relax$/,/^# end patch relax$/s/^#| //p", "s.sh"],
        cwd=tmp_path, capture_output=True, check=True,
    )  # fmt: skip
    assert out.stdout.decode("utf-8") == patch_text


def test_truncated_or_missing_patch_text_is_noted() -> None:
    patch = {"digest": "blake3:" + "c" * 64, "size": 9_000_000, "text": None, "truncated": True}
    script = render_script(make(["x"], code={"relax": {"commit": COMMIT, "patch": patch}}))
    assert "# expected: relax at " + COMMIT in script
    assert "(patch text truncated: take it from the store by its digest)" in script
    assert "# begin patch" not in script


def test_newlines_in_recorded_text_cannot_escape_comments() -> None:
    code = {"x\nrm -rf /": {"commit": COMMIT, "branch": "main\ntouch /tmp/pwned", "dirty": False}}
    manifest = make(["python", "t.py"], code=code)
    manifest.command.cwd = "/work\necho pwned"
    script = render_script(manifest)
    assert command_lines(script) == ["python t.py"]


def test_invalid_env_names_are_not_exported() -> None:
    script = render_script(
        make(["x"], config={"selected_env": {"A;rm -rf /": "1", "NCCL_ALGO": "v"}})
    )
    assert command_lines(script) == ["export NCCL_ALGO=v", "x"]
    assert "is not a shell variable name" in script


def test_redacted_words_are_flagged_above_the_command() -> None:
    argv = ["python", "train.py", "--api-key", "sk-proj-***", "--data", "<HOME>/data", "--ok"]
    env = {"HF_TOKEN": "hf_***", "NCCL_PROTO": "Si***", "NCCL_ALGO": "<internal-host>"}
    manifest = make(argv, config={"selected_env": env})
    lines = render_script(manifest).splitlines()
    command = lines.index(shlex.join(argv))
    assert lines[command - 2].startswith("# FILL IN BY HAND: argv[3] ('sk-proj-***')")
    assert lines[command - 1].startswith("# FILL IN BY HAND: argv[5] ('<HOME>/data')")
    export = lines.index("export NCCL_PROTO='Si***'")
    assert lines[export - 1] == "# FILL IN BY HAND: NCCL_PROTO was redacted when recorded"
    assert "#   only if you trust it: export HF_TOKEN='hf_***'" in lines  # not applied
    assert [r.label for r in redacted_inputs(manifest)] == [
        "argv[3]",
        "argv[5]",
        "env NCCL_PROTO",
        "env NCCL_ALGO",
    ]


def test_paths_listed_as_redacted_are_flagged_without_a_mark() -> None:
    manifest = make(
        ["python", "train.py", "--password", "hunter"],
        collection={"redacted": ["command.argv.3"]},
    )
    assert [r.path for r in redacted_inputs(manifest)] == ["command.argv.3"]
    assert "# FILL IN BY HAND: argv[3] (hunter)" in render_script(manifest)


def test_empty_argv_says_there_is_nothing_to_rerun() -> None:
    script = render_script(make([]))
    assert "there is no command to rerun" in script
    assert command_lines(script) == []
    with pytest.raises(RefusedError, match="nothing to rerun"):
        rerun_confirmed(make([]), report=PASSED)


def test_refusal_names_failed_fields_and_redacted_inputs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    argv = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    failed = CheckReport(
        (
            CheckResult("commit", "code.relax.commit", "FAIL", COMMIT, "9" * 40),
            CheckResult("driver", "hardware.driver_version", "WARN", "550", "560"),
            CheckResult("gpu_model", "hardware.gpu_model", "FAIL", "H100", "A100"),
        )
    )
    assert refusal_reasons(make(argv), failed, trust_command=True) == [
        "check FAILs on code.relax.commit",
        "check FAILs on hardware.gpu_model",
    ]
    old = make(argv)
    old.dna = compute_dna(old, version=2)  # a version-2 DNA leaves the command out
    assert refusal_reasons(old, PASSED) == [
        "command.argv: DNA version 2 does not cover the command; give --trust-command to "
        "run it as recorded"
    ]
    assert refusal_reasons(make(argv), PASSED) == []  # version 3: the DNA covers it
    with pytest.raises(RefusedError, match=r"refusing to rerun: check FAILs on code\.relax"):
        rerun_confirmed(make(argv), report=failed, trust_command=True)
    redacted = make([*argv, "--token", "ghp_***"])
    with pytest.raises(RefusedError, match=r"filled in by hand: argv\[4\]") as caught:
        rerun_confirmed(redacted, report=PASSED, trust_command=True)
    assert caught.value.exit_code == 1
    assert not marker.exists()


def test_confirmed_run_passes_exit_status_and_environment(tmp_path: Path) -> None:
    out = tmp_path / "env.txt"
    code = (
        f"import os,sys; open({str(out)!r},'w').write(os.environ['NCCL_ALGO'] + "
        "str(os.environ.get('NCCL_DEBUG'))); sys.exit(3)"
    )
    env = {"NCCL_ALGO": "Tree", "NCCL_DEBUG": "WARN"}
    manifest = make([sys.executable, "-c", code], config={"selected_env": env})
    assert rerun_confirmed(manifest, cwd=tmp_path, report=PASSED, trust_command=True) == 3
    assert out.read_text() == "TreeNone"  # NCCL_DEBUG is not on the allow-list


def test_missing_program_is_a_launch_error(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="cannot start") as caught:
        run_recorded(make([str(tmp_path / "no-such-program")]))
    assert caught.value.exit_code == 127


@pytest.mark.parametrize("flags", [[], ["--dry-run", "--confirm"]])
def test_exactly_one_mode_is_required(tmp_path: Path, flags: list[str]) -> None:
    path = tmp_path / "m.json"
    write_manifest(make(["python", "t.py"]), path)
    result = CliRunner().invoke(cli, ["rerun", str(path), *flags])
    assert result.exit_code == 2
    assert "exactly one of --dry-run or --confirm" in result.output


def test_dry_run_through_the_cli_prints_the_script(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    write_manifest(make([]), path)
    result = CliRunner().invoke(cli, ["rerun", str(path), "--dry-run"])
    assert result.exit_code == 0
    assert result.output == render_script(make([]))


# --- the recording user's home, written `~` -------------------------------------------


def test_own_home_is_expanded_and_other_homes_stay_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from expdna.manifest.redact import redact_tree

    home = tmp_path / "alice"
    monkeypatch.setenv("HOME", str(home))
    doc, redacted = redact_tree(
        {
            "command": {"argv": [f"{home}/venv/bin/train", f"--out={home}/runs", "/home/bob/x"]},
            "config": {"selected_env": {"NCCL_DEBUG_FILE": f"{home}/nccl.%h:/opt/n"}},
        }
    )
    assert doc["command"]["argv"] == ["~/venv/bin/train", "--out=~/runs", "<HOME>/x"]
    assert doc["config"]["selected_env"] == {"NCCL_DEBUG_FILE": "~/nccl.%h:/opt/n"}
    assert redacted == ["command.argv.2"]  # `~` is a spelling, `<HOME>` hides a person

    manifest = make(doc["command"]["argv"], config=doc["config"], collection={"redacted": redacted})
    assert [r.label for r in redacted_inputs(manifest)] == ["argv[2]"]
    script = render_script(manifest)
    assert command_lines(script) == ['"$HOME"/venv/bin/train --out="$HOME"/runs \'<HOME>/x\'']
    assert '#   only if you trust it: export NCCL_DEBUG_FILE="$HOME"/nccl.%h:/opt/n' in script


def test_confirmed_run_expands_the_own_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    program = home / "bin" / "show"
    program.parent.mkdir(parents=True)
    program.write_text('#!/bin/sh\nprintf "%s|%s" "$1" "$NCCL_DEBUG_FILE" > "$2"\n')
    program.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    out = tmp_path / "out.txt"
    manifest = make(
        ["~/bin/show", "--data=~/data", str(out)],
        config={"selected_env": {"NCCL_DEBUG_FILE": "~/w:~/v"}},
    )
    assert rerun_confirmed(manifest, report=PASSED, trust_command=True) == 0
    assert out.read_text() == f"--data={home}/data|"  # a location variable is not applied


def test_a_manifest_edited_after_it_was_written_says_so_in_the_script() -> None:
    # Someone swapped the argv and kept the trusted DNA: the reviewer must not read that
    # DNA as the script's.
    trusted = make(["python", "train.py", "--lr", "0.1"])
    forged = trusted.model_copy(deep=True)
    forged.command.argv = ["bash", "-c", "touch /tmp/owned"]
    script = render_script(forged)
    lines = script.splitlines()
    assert lines[4] == f"# dna:          {short(trusted.dna.value)}"  # type: ignore[union-attr]
    assert lines[5].startswith("# EDITED: the content hashes to ")
    assert "rerun --confirm refuses it" in lines[5]
    assert "# EDITED" not in render_script(trusted)
