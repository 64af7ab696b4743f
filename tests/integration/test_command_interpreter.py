"""The environment of the interpreter the command names, asked of that interpreter.

A second virtual environment, made once for the module with ``python -m venv`` and a wheel
installed into it with its own pip, stands for "the other interpreter": ``generate`` and
``expdna run`` must record its Python and its packages, not expdna's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from expdna.api import collect, generate
from expdna.collectors.interpreter import same_environment
from expdna.compare.rerun import expand_home
from tests.factories import EXPDNA, git

WHEEL_NAME = "tinyprobe_pkg"
WHEEL_VERSION = "1.2.3"


def _wheel(folder: Path) -> Path:
    """A real (minimal) wheel pip installs offline."""
    dist_info = f"{WHEEL_NAME}-{WHEEL_VERSION}.dist-info"
    files = {
        f"{WHEEL_NAME}/__init__.py": "VALUE = 1\n",
        f"{dist_info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {WHEEL_NAME.replace('_', '-')}\n"
            f"Version: {WHEEL_VERSION}\n"
        ),
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    path = folder / f"{WHEEL_NAME}-{WHEEL_VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        record = "".join(f"{name},,\n" for name in files) + f"{dist_info}/RECORD,,\n"
        archive.writestr(f"{dist_info}/RECORD", record)
    return path


@pytest.fixture(scope="module")
def other_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``bin/python`` of a second venv holding the wheel above and nothing of expdna's
    (installed by pip into that venv: ``pip --python``; the venv itself has no pip)."""
    root = tmp_path_factory.mktemp("venv2")
    venv = ["-m", "venv", "--without-pip", str(root / "v")]
    subprocess.run([sys.executable, *venv], check=True, timeout=120)
    python = root / "v" / "bin" / "python"
    wheel = _wheel(root)
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
    subprocess.run(
        [*pip, "--no-index", "--no-deps", str(wheel)],
        check=True,
        timeout=120,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    return python


def _asked(python: Path, code: str) -> str:
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=30)
    return done.stdout.strip()


def _checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "train.py").write_text("import sys\nprint('ran', sys.executable)\n")
    git(repo, "add", ".")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    return repo


def test_generate_records_the_commands_interpreter(other_python: Path, tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    _, theirs = generate([str(other_python), "train.py"], output=tmp_path / "a.json", cwd=repo)
    _, ours = generate([sys.executable, "train.py"], output=tmp_path / "b.json", cwd=repo)
    env = theirs.to_dict()["environment"]
    listed = json.loads(
        _asked(
            other_python,
            "import json, importlib.metadata as m;"
            "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))",
        )
    )
    assert env["packages"][WHEEL_NAME.replace("_", "-")] == WHEEL_VERSION
    assert set(env["packages"]) == {name.lower() for name in listed}
    assert "expdna" not in env["packages"] and "expdna" in ours.to_dict()["environment"]["packages"]
    assert env["package_count"] == len(listed)
    assert env["python_version"] == _asked(
        other_python, "import platform; print(platform.python_version())"
    )
    assert env["python_executable"] == str(other_python)
    assert env["framework"] == {}  # no torch there, though expdna's interpreter has one
    assert "torch" in ours.to_dict()["environment"]["framework"]
    assert theirs.unknown is None
    notes = theirs.to_dict()["collection"]["collectors"]["environment"]["notes"]
    assert notes == [
        f"environment of the command's interpreter {other_python}, asked in a subprocess"
    ]
    assert theirs.dna is not None and ours.dna is not None
    assert theirs.dna.sections["environment"] != ours.dna.sections["environment"]


def test_the_same_environment_is_not_probed(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    bin_dir = Path(sys.executable).parent
    manifest = collect(
        ["python", "train.py"],
        cwd=repo,
        collectors=["environment"],
        environ={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"},
        probe_interpreter=True,
    )
    assert "notes" not in manifest.to_dict()["collection"]["collectors"]["environment"]
    assert expand_home(manifest.to_dict()["environment"]["python_executable"]) == sys.executable


def test_a_venv_is_another_environment_though_its_python_is_a_symlink(
    other_python: Path,
) -> None:
    assert os.path.samefile(other_python, Path(other_python).resolve())
    assert not same_environment(other_python, str(Path(other_python).resolve()))
    assert same_environment(other_python, str(other_python))


def test_python3_on_path_is_the_commands_interpreter(other_python: Path, tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    path = f"{other_python.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    manifest = collect(
        ["python3", "train.py"],
        cwd=repo,
        collectors=["environment", "framework"],
        environ={**os.environ, "PATH": path},
        probe_interpreter=True,
    )
    assert (
        manifest.to_dict()["environment"]["packages"][WHEEL_NAME.replace("_", "-")] == WHEEL_VERSION
    )
    assert manifest.to_dict()["collection"]["collectors"]["framework"]["status"] == "skipped"


def _broken(tmp_path: Path, name: str, body: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "python3"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("exit 3", "exited with status 3"),
        ('echo \'{"probe": 1, "python_version": 7}\'', "answered without a valid python_version"),
        ("echo not json", "answered with output that is not JSON"),
        ("sleep 30", "gave no answer within"),
    ],
)
def test_a_broken_interpreter_leaves_the_environment_unknown(
    tmp_path: Path, body: str, reason: str
) -> None:
    repo = _checkout(tmp_path)
    python = _broken(tmp_path, "broken", body)
    manifest = collect(
        [str(python), "train.py"],
        cwd=repo,
        collectors=["environment", "framework"],
        deadline_s=1.0,
        probe_interpreter=True,
    )
    assert manifest.unknown is not None
    assert f"the command's interpreter {python} {reason}" in manifest.unknown["environment"]
    assert not manifest.to_dict()["environment"]["packages"]  # expdna's never stand in
    assert manifest.to_dict()["environment"]["kernel"]  # the machine's facts are still there


def test_an_interpreter_that_is_not_there_leaves_the_environment_unknown(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    manifest = collect(
        ["python3.99", "train.py"],
        cwd=repo,
        collectors=["environment"],
        environ={**os.environ, "PATH": str(tmp_path)},
        probe_interpreter=True,
    )
    assert manifest.unknown is not None
    assert "the command's interpreter 'python3.99' was not found" in manifest.unknown["environment"]


def test_the_hook_is_never_probed(other_python: Path, tmp_path: Path) -> None:
    # In the hook the process is the command's interpreter: what argv says is not asked.
    repo = _checkout(tmp_path)
    manifest = collect([str(other_python), "train.py"], cwd=repo, collectors=["environment"])
    assert expand_home(manifest.to_dict()["environment"]["python_executable"]) == sys.executable


def test_expdna_run_records_and_runs_under_the_other_interpreter(
    other_python: Path, tmp_path: Path
) -> None:
    repo = _checkout(tmp_path)
    done = subprocess.run(
        [
            EXPDNA,
            "run",
            "--json",
            "--output-dir",
            str(tmp_path),
            "--",
            str(other_python),
            "train.py",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"ran {other_python}" in done.stdout
    doc: dict[str, Any] = json.loads(next(tmp_path.glob("manifest_*.json")).read_text())
    assert doc["environment"]["packages"][WHEEL_NAME.replace("_", "-")] == WHEEL_VERSION
    assert "expdna" not in doc["environment"]["packages"]


def test_the_probe_reads_torchs_build_as_the_framework_collector_does(tmp_path: Path) -> None:
    # expdna's own interpreter has torch: asked as if it were another one, the probe gives
    # the build constants the in-process collector reads from the same version.py.
    from expdna.collectors.context import CollectContext
    from expdna.collectors.environment import _from_report
    from expdna.collectors.framework import torch_build
    from expdna.collectors.interpreter import probe

    report = probe(Path(sys.executable), cwd=tmp_path, environ=os.environ, timeout_s=30)
    assert report.distributions is not None and "torch" in report.distributions
    section = _from_report(report, CollectContext(cwd=tmp_path), Path("/"))
    torch = section["framework"]["torch"]
    assert torch["build"] == torch_build() and "git_version" in torch["build"]
    assert torch["version"] == report.distributions["torch"]
