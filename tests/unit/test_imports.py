"""`import expdna` stays light: no torch, ray, pyarrow or sqlalchemy."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "ray", "pyarrow", "sqlalchemy", "numpy", "pandas")
HEAVY += ("starlette", "jinja2", "uvicorn")  # the ui extra: only `expdna ui` loads it


def test_import_expdna_imports_no_heavy_module() -> None:
    code = (
        "import sys, expdna, expdna.cli, expdna.collectors, expdna.compare;"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
