"""The pure parts of check and rerun: the environment allow-list, the rebuilt command, the
command against its recorded arguments, the entry of a command, and Host parsing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from expdna.compare.command_check import argv_disagreements
from expdna.compare.entry import find_entry
from expdna.compare.env_policy import APPLIED, REASONS, not_applied_reason
from expdna.compare.inputs import changed_keys
from expdna.compare.relaunch import plan
from expdna.manifest.command_line import parse_command
from expdna.manifest.model import Manifest
from expdna.ui.hosts import allowed_hosts, header_host

ISSUE_VARIABLES = {
    "CUDA_INJECTION64_PATH": "it names code or a library to load",
    "NCCL_NET_PLUGIN": "it names code or a library to load",
    "NCCL_TUNER_PLUGIN": "it names code or a library to load",
    "HF_ENDPOINT": "it points the run at a service",
    "HF_HUB_CACHE": "it names a location to read from",
    "HF_DATASETS_TRUST_REMOTE_CODE": "it changes what loaded files may execute",
    "RAY_ADDRESS": "it is a per-allocation value (job, node, address, port)",
    "RAY_JOB_CONFIG_JSON_ENV_VAR": "it carries a configuration",
    "RAY_RUNTIME_ENV_PLUGINS": "it names code or a library to load",
    "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "it changes what loaded files may execute",
    "PYTHONPATH": "it changes what code loads",
    "LD_PRELOAD": "it changes what code loads",
}


@pytest.mark.parametrize("name", list(ISSUE_VARIABLES))
def test_each_variable_of_the_issue_has_its_reason(name: str) -> None:
    assert not_applied_reason(name) == ISSUE_VARIABLES[name]


def test_the_allow_list_loads_nothing() -> None:
    assert not_applied_reason("NCCL_ALGO") is None and not_applied_reason("PYTHONHASHSEED") is None
    assert not_applied_reason(
        "NCCL_SOME_NEW_KNOB",
    ).startswith("it is not on the allow-list")
    for name in APPLIED:  # no allowed name reads as code to load or a trust switch
        assert not [r.why for r in REASONS[:3] if r.test(name)], name


def test_a_hook_command_gets_an_interpreter_and_rendezvous_become_variables() -> None:
    hook = plan(["train.py", "--lr", "1"])
    assert hook.needs_interpreter and hook.words() == ["python", "train.py", "--lr", "1"]
    assert hook.resolved({})[0] == sys.executable
    accel = plan(
        ["accelerate", "launch", "--num_machines", "2", "--main_process_ip", "10.0.0.1",
         "--main_process_port=29500", "train.py"]
    )  # fmt: skip
    assert [(r.variable, r.recorded) for r in accel.rendezvous] == [
        ("MASTER_ADDR", "10.0.0.1"),
        ("MASTER_PORT", "29500"),
    ]
    assert accel.missing({"MASTER_ADDR": "h"}) == ["MASTER_PORT"]
    words = accel.resolved({"MASTER_ADDR": "h", "MASTER_PORT": "1"})
    assert words[5:7] == ["h", "--main_process_port=1"]
    module = plan(["python", "-m", "pkg.train", "--lr", "1"])
    assert not module.needs_interpreter and module.rendezvous == ()


def manifest(argv: list[str], args: dict[str, object]) -> Manifest:
    return Manifest.model_validate(
        {
            "run_id": "r",
            "generated_at": "2026-08-05T14:30:25Z",
            "command": {"argv": argv},
            "config": {"resolved_args": args},
        }
    )


def test_argv_must_give_every_recorded_argument_and_no_other() -> None:
    assert argv_disagreements(manifest(["python", "t.py", "--lr", "1"], {"lr": 1})) == []
    assert argv_disagreements(manifest(["python", "t.py"], {"lr": 1})) == [
        "lr=1 is recorded but not in argv"
    ]
    assert argv_disagreements(manifest(["python", "t.py", "--lr", "2", "--x"], {"lr": 1})) == [
        "lr: argv says 2, the config 1",
        "x=True is in argv but not recorded",
    ]


def test_the_entry_of_each_kind_of_command(tmp_path: Path) -> None:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "train.py").write_text("")
    tops = {"proj": tmp_path}
    module = find_entry(parse_command(["python", "-m", "pkg.train"]), tmp_path, tops)
    assert module is not None and module.path == tmp_path / "src" / "pkg" / "train.py"
    installed = find_entry(parse_command(["python", "-m", "json.tool"]), tmp_path, tops)
    assert installed is not None and installed.path is None
    program = find_entry(parse_command(["bash", "-c", "x"]), tmp_path, tops)
    assert program is not None and (program.kind, program.path) == ("program", None)
    inline = find_entry(parse_command(["python", "-c", "x"]), tmp_path, tops)
    assert inline is not None and inline.kind == "inline"
    launched = find_entry(
        parse_command(["torchrun", "--nproc-per-node", "2", "t.py"]), tmp_path, tops
    )
    assert launched is not None and launched.path == tmp_path / "t.py"


def test_changed_keys_in_file_order() -> None:
    old = {"lr": 0.1, "model": {"depth": 2, "width": 64}}
    new = {"lr": 0.2, "model": {"depth": 3, "width": 64}, "extra": 1}
    assert changed_keys(old, new) == ["lr", "model.depth", "extra"]


def test_host_headers() -> None:
    assert header_host("LOCALHOST:5310") == "localhost"
    assert header_host("[::1]:5310") == "[::1]" and header_host("[::1]") == "[::1]"
    assert header_host("[::1") is None and header_host("a:b") is None and header_host("") is None
    assert allowed_hosts("0.0.0.0", ["box.lab"]) == {"localhost", "127.0.0.1", "[::1]", "box.lab"}
    assert "[fe80::1]" in allowed_hosts("fe80::1")
