"""The hook's command on real processes: python, torchrun, a multiprocessing spawn child."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

from expdna.integrations.launch import proc_ancestors, this_command


def test_proc_ancestors_reads_the_real_parent() -> None:
    first = next(iter(proc_ancestors()))
    assert first == Path(f"/proc/{os.getppid()}/cmdline").read_bytes().decode().split("\0")[:-1]


SCRIPT = """
import json, sys
from expdna.integrations.launch import this_command
print("COMMAND=" + json.dumps(this_command()))
"""


def _child_command(stdout: str) -> list[str]:
    line = next(line for line in stdout.splitlines() if line.startswith("COMMAND="))
    return list(json.loads(line[len("COMMAND=") :]))


def test_a_real_python_process(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, "-u", "train.py", "--lr", "0.1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TORCHELASTIC_RUN_ID": ""},
    )
    assert _child_command(done.stdout) == [sys.executable, "-u", "train.py", "--lr", "0.1"]


def test_a_real_torchrun(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    torchrun = Path(sys.executable).with_name("torchrun")
    done = subprocess.run(
        [str(torchrun), "--standalone", "--nproc-per-node", "1", "train.py", "--lr", "0.1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    expected = ["torchrun", "--standalone", "--nproc-per-node", "1", "train.py", "--lr", "0.1"]
    assert _child_command(done.stdout) == expected


def _spawned(queue: multiprocessing.Queue[list[str]]) -> None:
    queue.put(this_command())


def test_a_real_spawn_child_records_the_command_of_its_parent() -> None:
    context = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[list[str]] = context.Queue()
    child = context.Process(target=_spawned, args=(queue,))
    child.start()
    got = queue.get(timeout=60)
    child.join(60)
    assert got == this_command()
