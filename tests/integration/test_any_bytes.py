"""Any bytes, any names: argv, environment values and paths that are not UTF-8 are recorded
in the escaped form through the installed command, and rerun gives the bytes back."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.factories import EXPDNA, git

ECHO = (
    "import os, sys; "
    "sys.stdout.buffer.write(os.fsencode(sys.argv[1]) + b'|' + os.environb[b'NCCL_ALGO'])\n"
)


def run(cwd: Path | bytes, *args: str | bytes, env: dict[bytes, bytes] | None = None) -> Any:
    environ = {**os.environb, **(env or {})}
    return subprocess.run(
        [os.fsencode(EXPDNA), *(os.fsencode(a) for a in args)],
        cwd=cwd,
        capture_output=True,
        timeout=120,
        env=environ,
    )


def test_non_utf8_argv_env_and_cwd_are_recorded_losslessly(repo: Path, tmp_path: Path) -> None:
    odd = os.path.join(os.fsencode(repo), b"caf\xe9-dir")
    os.mkdir(odd)
    # rerun runs only a script a recorded repository holds (not `-c` code).
    (repo / "echo.py").write_text(ECHO)
    git(repo, "add", "echo.py")
    git(repo, "commit", "-q", "-m", "echo")
    out = tmp_path / "m.json"
    done = run(
        odd,
        "generate", "--output", str(out), "--json", "--",
        # By name, not sys.executable: a path under $HOME is recorded as <HOME>/... and rerun
        # --confirm would rightly refuse it until filled in by hand.
        "python3", "../echo.py", b"\xff\xfe-word", "--name", b"caf\xe9",
        env={b"NCCL_ALGO": b"eth\xff0"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["command"]["argv"][2] == "bytes:%FF%FE-word"
    assert doc["config"]["resolved_args"]["name"] == "bytes:caf%E9"
    assert doc["config"]["selected_env"]["NCCL_ALGO"] == "bytes:eth%FF0"
    assert doc["command"]["cwd"].startswith("bytes:")
    assert doc["command"]["cwd"].endswith("/caf%E9-dir")

    # check recomputes the DNA of the escaped document: it is as written.
    checked = run(odd, "check", "--json", str(out))
    results = json.loads(checked.stdout)["results"]
    assert not [r for r in results if r["field"] == "dna"]

    # rerun --confirm hands the program the original bytes, argv and environment alike.
    again = run(
        odd, "rerun", str(out), "--confirm", "--trust-command", env={b"NCCL_ALGO": b"other"}
    )
    assert again.returncode == 0, again.stderr.decode(errors="replace")
    assert again.stdout.endswith(b"\xff\xfe-word|eth\xff0")

    # The dry-run script, run by a shell, passes the same bytes.
    script = run(odd, "rerun", str(out), "--dry-run")
    assert script.returncode == 0
    ran = subprocess.run(["bash", "-c", script.stdout.decode()], cwd=odd, capture_output=True)
    assert ran.stdout.endswith(b"\xff\xfe-word|eth\xff0"), ran.stderr


def test_option_names_in_any_script_are_parsed(repo: Path, tmp_path: Path) -> None:
    dnas = []
    for value in ("1", "2"):
        out = tmp_path / f"m{value}.json"
        done = run(
            repo, "generate", "--output", str(out), "--", "x", "--ключ", value, "--学习率=3e-4"
        )
        assert done.returncode == 0, done.stderr
        doc = json.loads(out.read_text(encoding="utf-8"))
        assert doc["config"]["resolved_args"] == {"ключ": int(value), "学习率": 3e-4}
        dnas.append(doc["dna"]["value"])
    assert dnas[0] != dnas[1]
