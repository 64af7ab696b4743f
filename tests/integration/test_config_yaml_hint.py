"""A core install without PyYAML: a YAML config file's values are missing, and it says how
to get them (as pyarrow's hint does for table footers)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.factories import EXPDNA, git

HINT = "PyYAML is not installed: 1 YAML config file(s) without values (pip install 'expdna[yaml]')"


def test_a_yaml_config_without_pyyaml_names_the_fix(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "train.py").write_text("print('training')\n")
    (repo / "exp.yaml").write_text("optimizer:\n  lr: 0.0003\n")
    # PyYAML cannot be imported in the expdna process, as on a core install.
    blocked = tmp_path / "blocked" / "yaml"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('no PyYAML here')\n")
    env = {**os.environ, "PYTHONPATH": str(blocked.parent), "EXPDNA_STORE": str(tmp_path / "s")}
    done = subprocess.run(
        [EXPDNA, "generate", "-o", "m.json", "--", "python", "train.py", "--config", "exp.yaml"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert HINT in done.stderr
    doc = json.loads((repo / "m.json").read_text())
    assert doc["collection"]["collectors"]["config_files"]["warnings"] == [HINT]
    [details] = doc["config"]["config_file_details"].values()
    assert "pip install 'expdna[yaml]'" in details["parse_error"]
    assert "config_values" not in doc["config"]
    assert doc["config"]["config_files"]  # the file's digest is in the DNA all the same
