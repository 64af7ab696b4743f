"""Factories and helpers the tests share: realistic synthetic manifests, real git
repositories, the ``expdna`` command, store edits and replayed nvidia-smi captures.

A synthetic manifest has about 80 leaves, as real runs do: two repositories (one dirty,
with a patch), a few dozen resolved args, a dozen packages, GPUs with VBIOS versions, a
Ray runtime, a dataset and final metrics. Fixtures live in conftest.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from expdna.collectors.nvidia_smi import QUERY_FIELDS, parse_query_csv
from expdna.collectors.process import Completed
from expdna.digest import ref_of
from expdna.manifest.dna import compute_dna
from expdna.manifest.io import manifest_from_dict
from expdna.manifest.model import Manifest

if TYPE_CHECKING:
    from click.testing import Result

    from expdna.store import Store

#: The public data the tests read (see data/README.md): part of the repository, so a
#: missing file is a failure, never a skip.
DATA = Path(__file__).resolve().parent / "data"

# --- real git repositories -----------------------------------------------------------------

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def interruptible() -> None:
    """A child's ``preexec_fn``: Ctrl-C's default action, as a terminal's foreground job has
    it. A test run started in the background (``cmd &`` in a script, ``nohup``) ignores
    SIGINT, and an ignored signal stays ignored across exec, so the child would never see
    the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


# --- manifests -----------------------------------------------------------------------------

VBIOS = "96.00.89.00.01"
DRIVER = "550.54.15"
PATCH_TEXT = (
    "diff --git a/train.py b/train.py\n--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n-lr=1\n+lr=2\n"
)


def synthetic_doc(
    i: int,
    *,
    setup: int | None = None,
    vbios: str = "96.00.5A.00.01",
    driver: str = "535.104.05",
    patch: str | None = PATCH_TEXT,
    run_id: str | None = None,
) -> dict[str, Any]:
    """Manifest ``i``; runs with the same ``setup`` share a DNA (``setup`` defaults to i)."""
    setup = i if setup is None else setup
    code: dict[str, Any] = {
        "train": {
            "commit": f"{setup % 97:02x}" + "1c8e2fb98b7af3e1e86263ccd1f375e4d833b2"[:38],
            "branch": "main",
            "dirty": patch is not None,
            "remote": "https://github.com/example/train.git",
        },
        "megatron": {"commit": "8325919e7a2f4c3d1b5e8f9a0c2d3e4f5a6b7c8d", "dirty": False},
    }
    if patch is not None:
        data = patch.encode()
        code["train"]["patch"] = {"digest": ref_of(data), "size": len(data), "text": patch}
    args: dict[str, Any] = {
        "lr": 0.0003,
        "seed": setup,
        "global_batch_size": 16,
        "output_dir": f"/ckpt/run{i}",
    }
    args.update({f"option_{k}": k * 0.5 for k in range(20)})
    return {
        "schema_version": "1.0",
        "run_id": run_id or f"20260805_{143025 + i // 60:06d}_1c8e2fb_{i:06d}",
        "generated_at": f"2026-08-05T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}Z",
        "command": {
            "argv": ["python", "train.py", "--lr", "0.0003", "--seed", str(setup)],
            "cwd": "<HOME>/train",
        },
        "code": code,
        "config": {"resolved_args": args, "selected_env": {"NCCL_DEBUG": "INFO"}},
        "training": {
            "algorithm": "grpo",
            "parallel_topology": {"tensor": 2, "pipeline": 1},
            "global_batch_size": 16,
            "seeds": {"seed": setup},
        },
        "environment": {
            "python_version": "3.12.3",
            "python_implementation": "CPython",
            "packages": {
                "torch": "2.11.0+cu129",
                "ray": "2.56.0",
                **{f"package-{k}": f"{k}.{k + 1}.0" for k in range(10)},
            },
            "os": "Debian GNU/Linux 12 (bookworm)",
            "kernel": "6.1.0-18-amd64",
            "glibc": "2.36",
        },
        "hardware": {
            "gpus": [
                {
                    "name": "NVIDIA H100 80GB HBM3",
                    "memory_gb": 79.6,
                    "vbios_version": vbios,
                    "uuid": f"GPU-{n}",
                }
                for n in range(2)
            ],
            "gpu_model": "NVIDIA H100 80GB HBM3",
            "gpu_count": 2,
            "driver_version": driver,
            "cuda_version": "12.4",
            "nccl_version": "2.23.4",
            "cpu_model": "Intel(R) Xeon(R) Platinum 8480+",
            "cpu_count": 224,
        },
        "runtime": {
            "mode": "single_node_ray",
            "node_count": 1,
            "nodes": [{"role": "head", "resources": {"CPU": 224.0, "GPU": 2.0}}],
        },
        "data": {
            "datasets": [
                {"root": "/data/set", "digest": ref_of(b"listing"), "files": 3, "bytes": 300}
            ]
        },
        "metrics": {"final_loss": 1.0 / (i + 1), "reward": {"mean": 0.5}},
        "collection": {"collectors": {"git": {"status": "ok", "duration_ms": 1.5 + i}}},
    }


def manifest_of(doc: dict[str, Any]) -> Manifest:
    """``doc`` as a validated manifest with its DNA."""
    manifest = manifest_from_dict(doc)
    manifest.dna = compute_dna(manifest)
    return manifest


def synthetic(i: int, **kwargs: Any) -> Manifest:
    """:func:`synthetic_doc` as a validated manifest with its DNA."""
    return manifest_of(synthetic_doc(i, **kwargs))


#: Where a run's seed is recorded: the argument and, copied by the training collector, training.
SEED_PATHS = ("config.resolved_args.seed", "training.seeds.seed")


def seed_doc(
    i: int, *, seed: int = 0, driver: str = "535.104.05", **metrics: float
) -> dict[str, Any]:
    """Setup 1 of the factory with ``seed`` in every place the seed is recorded: the
    command's words (where DNA version 3 counts it), the resolved arguments and the
    training fields."""
    doc = synthetic_doc(i, setup=1, driver=driver)
    doc["command"]["argv"][-1] = str(seed)
    doc["config"]["resolved_args"]["seed"] = seed
    doc["training"]["seeds"]["seed"] = seed
    doc["metrics"] = dict(metrics)
    return doc


def dna(manifest: Manifest) -> str:
    assert manifest.dna is not None
    return manifest.dna.value


# --- stores --------------------------------------------------------------------------------


def record_docs(store: Store, *docs: dict[str, Any]) -> list[Manifest]:
    """Validate ``docs``, give each its DNA and record them one by one."""
    manifests = [manifest_of(doc) for doc in docs]
    for manifest in manifests:
        store.record(manifest)
    return manifests


def collide_prefix(store: Store, run_id: str, with_dna: str, length: int = 6) -> str:
    """Give ``run_id`` a DNA sharing its first ``length`` hex with ``with_dna`` (index only).

    A real 6-hex collision needs thousands of runs (the birthday bound of 16^6); resolving
    prefixes is index work, so the index row is edited instead.
    """
    from sqlalchemy import update

    from expdna.store.index.models import Run

    crafted = with_dna[:length] + ("0" if with_dna[length] != "0" else "1") + with_dna[length + 1 :]
    with store.index.write() as conn:
        conn.execute(update(Run).where(Run.run_id == run_id).values(dna=crafted))
    return crafted


# --- the expdna command --------------------------------------------------------------------

# The command installed beside this interpreter first: another expdna on PATH (say, a user's
# own install) is not the code under test.
_BESIDE = Path(sys.executable).with_name("expdna")
EXPDNA = str(_BESIDE) if _BESIDE.exists() else shutil.which("expdna") or str(_BESIDE)


def run(store: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``expdna ARGS`` as a process on ``store`` (not on an index URL from the environment)."""
    env = {**os.environ, "EXPDNA_STORE": str(store)}
    env.pop("EXPDNA_INDEX_URL", None)
    return subprocess.run(
        [EXPDNA, *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd
    )


def invoke(store: Path, *args: str) -> Result:
    """``expdna --store STORE ARGS`` through click's runner, in this process."""
    from click.testing import CliRunner

    from expdna.cli import cli

    return CliRunner().invoke(cli, ["--store", str(store), *args])


def rows(text: str) -> list[dict[str, Any]]:
    parsed = json.loads(text)
    assert isinstance(parsed, list)
    return parsed


# --- nvidia-smi captures (data/nvidia-smi) -------------------------------------------------


def smi_dir(testdata: Path) -> Path:
    return testdata / "nvidia-smi"


def capture_section(text: str, title: str) -> str:
    """The body of one ``# <title>`` section of an nvidia_gpu_exporter capture bundle.

    A section is a ``####`` rule, ``# title`` and ``# $ command`` lines, a rule, then the
    output up to the next rule.
    """
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"# {title}"))
    body_start = next(i for i in range(start, len(lines)) if lines[i].startswith("####")) + 1
    end = next(
        (i for i in range(body_start, len(lines)) if lines[i].startswith("####")), len(lines)
    )
    return "\n".join(lines[body_start:end]).strip("\n") + "\n"


_UNIT = re.compile(r" (MiB|W|MHz|%|C|us)$")


def query_output(text: str, fields: Sequence[str] = QUERY_FIELDS) -> str:
    """What ``--query-gpu=<fields> --format=csv,noheader,nounits`` prints on the captured
    machine: the recorded row's columns, picked by name, units dropped."""
    rows = parse_query_csv(capture_section(text, "idle :: query-gpu"))
    out = []
    for row in rows:
        cells = []
        for name in fields:
            value = row[name]
            cells.append("[N/A]" if value is None else _UNIT.sub("", value))
        out.append(", ".join(cells))
    return "\n".join(out) + "\n"


# nvidia-smi's message when the driver is not loaded (exit status 9).
NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n"
)


@dataclass
class Replay:
    """A :class:`~expdna.collectors.process.Runner` answering with recorded outputs.

    ``answers`` maps the first argument (``--query-gpu``, ``-q``, ``--version``, ``-L``)
    to a list of (returncode, stdout) given out in turn; the last one repeats.
    """

    answers: Mapping[str, list[tuple[int, str]]]
    calls: list[list[str]] = field(default_factory=list)

    def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float,
        input: bytes | None = None,
    ) -> Completed:
        self.calls.append(list(argv))
        key = argv[1].split("=", 1)[0]
        if key not in self.answers:
            return Completed(2, b"", f"unexpected {key}".encode())
        queue = self.answers[key]
        index = sum(1 for c in self.calls if c[1].split("=", 1)[0] == key) - 1
        code, out = queue[min(index, len(queue) - 1)]
        return Completed(code, out.encode(), b"")
