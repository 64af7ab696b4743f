"""`import expdna` stays light: no torch, ray, pyarrow or sqlalchemy."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "ray", "pyarrow", "sqlalchemy", "numpy", "pandas")
FRAMEWORKS = ("mlflow", "wandb", "lightning", "pytorch_lightning", "transformers", "accelerate")
HEAVY += ("starlette", "jinja2", "uvicorn")  # the ui extra: only `expdna ui` loads it


def test_import_expdna_imports_no_heavy_module() -> None:
    code = (
        "import sys, expdna, expdna.cli, expdna.collectors, expdna.compare;"
        f"print(','.join(m for m in {HEAVY + FRAMEWORKS!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_the_hook_imports_no_tracker_or_framework_the_script_did_not() -> None:
    code = (
        "import sys, tempfile, expdna, expdna.integrations.trackers;"
        "run = expdna.start({'lr': 0.1}, output_dir=tempfile.mkdtemp(), collectors=['config']);"
        "run.add_runtime(); run.finish(metrics={'loss': 1.0});"
        f"print(','.join(m for m in {FRAMEWORKS!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
