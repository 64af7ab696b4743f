"""Finding the command's interpreter, and reading a probe's answer as hostile input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from expdna.collectors.interpreter import ProbeFailed, command_interpreter, read_report


def _report(**changes: object) -> bytes:
    report: dict[str, object] = {
        "probe": 1,
        "python_version": "3.12.1",
        "python_implementation": "CPython",
        "python_build": "main Jan 1 2026",
        "python_executable": "/opt/v/bin/python",
        "prefix": "/opt/v",
        "distributions": [["Foo_Bar", "1.0"], ["foo-bar", "2.0"], ["torch", "2.13.0"]],
        "hash_randomization": True,
        "torch_version_py": "__version__ = '2.13.0'\ncuda = None\n",
    }
    report.update(changes)
    return json.dumps(report).encode()


def test_a_report_is_read_with_pep503_names_first_one_winning() -> None:
    probed = read_report(_report())
    assert probed.distributions == {"foo-bar": "1.0", "torch": "2.13.0"}
    assert probed.python_version == "3.12.1"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"\xff", "not JSON"),
        (b"[1, 2]", "not a probe report"),
        (b"[" * 100_000, "not JSON"),
        (_report(probe=2), "not a probe report"),
        (_report(python_version="3.12; rm -rf /"), "invalid python_version"),
        (_report(python_version=None), "valid python_version"),
        (_report(python_build="x" * 300), "valid python_build"),
        (_report(distributions=[["a"]]), "invalid distribution list"),
        (_report(distributions=[["a", 1]]), "invalid distribution list"),
        (_report(distributions={"a": "1"}), "invalid distribution list"),
        (_report(hash_randomization="yes"), "valid hash_randomization"),
        (_report(torch_version_py=["x"]), "invalid torch_version_py"),
    ],
)
def test_a_hostile_report_is_refused_naming_the_field(raw: bytes, reason: str) -> None:
    with pytest.raises(ProbeFailed, match=reason):
        read_report(raw)


def _program(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_launchers_shebang_names_the_interpreter(tmp_path: Path) -> None:
    python = _program(tmp_path / "v" / "bin", "python", "")
    _program(tmp_path / "v" / "bin", "torchrun", f"#!{python}\nimport sys\n")
    environ = {"PATH": str(tmp_path / "v" / "bin")}
    found = command_interpreter(["torchrun", "--nproc-per-node", "2", "t.py"], tmp_path, environ)
    assert found == python


def test_pips_sh_trampoline_and_env_shebangs(tmp_path: Path) -> None:
    python = _program(tmp_path / "long path" / "bin", "python3", "")
    trampoline = f"#!/bin/sh\n'''exec' '{python}' \"$0\" \"$@\"\n' '''\n"
    _program(tmp_path / "bin", "accelerate", trampoline)
    _program(tmp_path / "bin", "train.py", "#!/usr/bin/env -S python3\n")
    environ = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}{python.parent}"}
    assert command_interpreter(["accelerate", "launch", "t.py"], tmp_path, environ) == python
    assert command_interpreter(["./bin/train.py"], tmp_path, environ) == python
    assert command_interpreter(["bash", "x.sh"], tmp_path, {"PATH": "/nonexistent"}) is None


def test_a_named_interpreter_that_is_missing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ProbeFailed, match=r"'python3\.99' was not found"):
        command_interpreter(["python3.99", "t.py"], tmp_path, {"PATH": str(tmp_path)})
