"""The entropy backstop on real, secret-free text: nothing changes.

Corpora: this repository's source, docs and their git history, the real nvidia-smi
captures in tests/data, the test environment's ``pip list`` / ``pip freeze``, and the
training configs in tests/data/redaction (DeepSpeed, Hydra, Accelerate, pyproject, Slurm).
The tests directory's own history is left out: it holds made-up credentials on purpose.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from expdna.manifest.redact import redact_argv, redact_text, redact_tree
from expdna.manifest.redact_names import (
    ANY_ASSIGNMENT,
    ASSIGNMENT,
    BARE_WORD,
    assignment,
    backstop,
    bare_backstop,
)
from expdna.manifest.redact_rules import rules_for
from tests.factories import DATA

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((DATA / "redaction").iterdir())


def backstop_hits(text: str) -> list[str]:
    """Values the backstop would hide that no shape or name rule already hides on their line
    (the docs show made-up tokens on purpose, as examples of what redaction catches)."""
    hits = []
    for m in ANY_ASSIGNMENT.finditer(text):
        if backstop(m) == m.group(0):
            continue
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        line = text[start : end if end >= 0 else len(text)]
        for rule in rules_for(line):
            line = rule.pattern.sub(rule.replace, line)
        if m.group("v") in ASSIGNMENT.sub(assignment, line):
            hits.append(m.group(0))
    return hits


# Made up on purpose, as examples of what redaction catches or as parts of the token table's
# regexes (the PyPI token's fixed head, age's alphabet, Neptune's base64 head).
EXAMPLES = {
    "Zx9wV8uT7sR6qP5oN4mL3kJ2",
    "AgENdGVzdC5weXBpLm9yZw",
    "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
    "Y2ktYm90OlB6OHNLMnFMbTRSdA==",
    "eyJhcGlfYWRkcmVzcyI6",
}


def prose_hits(text: str) -> list[str]:
    """Words the prose backstop would hide that no shape rule hides on their line."""
    hits = []
    for m in BARE_WORD.finditer(text):
        if bare_backstop(m) == m.group(0) or any(e in m.group(0) for e in EXAMPLES):
            continue
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        line = text[start : end if end >= 0 else len(text)]
        for rule in rules_for(line):
            line = rule.pattern.sub(rule.replace, line)
        if m.group(0) in line:
            hits.append(m.group(0))
    return hits


@pytest.fixture(autouse=True)
def _home_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    # The captures were taken as root: their /root paths are homes, not false positives.
    monkeypatch.setenv("HOME", "/srv/nobody-here")


def test_own_source_and_docs() -> None:
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "docs").rglob("*.md")]
    files += [*(ROOT / "benchmarks").rglob("*.py"), ROOT / "README.md", ROOT / "pyproject.toml"]
    assert len(files) > 50
    hits = {
        str(f.relative_to(ROOT)): backstop_hits(f.read_text()) + prose_hits(f.read_text())
        for f in files
    }
    assert {f: h for f, h in hits.items() if h} == {}


def test_own_git_history() -> None:
    log = subprocess.run(
        ["git", "log", "-p", "--", "src", "docs", "benchmarks", "examples", "README.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert len(log) > 100_000
    assert backstop_hits(log) == []
    assert prose_hits(log) == []


def test_nvidia_smi_captures_change_only_where_a_home_is() -> None:
    captures = sorted((DATA / "nvidia-smi").glob("*_*"))
    assert len(captures) >= 5
    for capture in captures:
        text = capture.read_text(errors="replace")
        assert backstop_hits(text) == [], capture.name
        changed = [
            new
            for old, new in zip(text.splitlines(), redact_text(text).splitlines(), strict=True)
            if old != new
        ]
        assert all("<HOME>" in line for line in changed), (capture.name, changed[:3])


@pytest.mark.parametrize("form", ["list", "freeze"])
def test_pip_list_of_the_test_environment(form: str) -> None:
    listing = subprocess.run(
        # not the editable install of this checkout: its line is the checkout's git remote
        [sys.executable, "-m", "pip", form, "--disable-pip-version-check", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert listing.count("\n") > 30
    assert redact_text(listing) == listing
    words = listing.split()
    assert redact_argv(words) == words
    env = {f"PKG_{i}": word for i, word in enumerate(words)}
    assert redact_tree({"config": {"selected_env": env}}) == ({"config": {"selected_env": env}}, [])


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_training_configs(config: Path) -> None:
    text = config.read_text()
    assert redact_text(text) == text


def test_a_launch_script_as_argv_and_environment() -> None:
    text = (DATA / "redaction" / "launch_slurm.sh").read_text()
    command = text[text.index("srun") :].replace("\\\n", " ")
    argv = shlex.split(command)
    assert len(argv) > 20
    assert redact_argv(argv) == argv
    env = dict(re.findall(r"^export (\w+)=(\S+)$", text, re.MULTILINE))
    assert len(env) > 8
    tree = {"config": {"selected_env": env}, "command": {"argv": argv}}
    assert redact_tree(tree) == (tree, [])


def test_a_generated_id_inside_a_name_is_kept_but_several_random_parts_are_not() -> None:
    from expdna.manifest.redact_entropy import looks_random

    assert not looks_random("offline-run-20261201_172943-mbi77gu4")
    assert not looks_random("wandb/offline-run-20261201_172943-mbi77gu4/files")
    assert looks_random("Xq7Rt2Lm-Zp4Wk9Yb-Hn3Vc8Jd")  # three random parts: a credential
