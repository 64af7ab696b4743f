"""examples/torchrun_tiny.py under the real ``torchrun``, gloo on the CPU: one run, one manifest.

Two layouts: one node of two ranks (``--standalone``), and two nodes of one rank each,
two ``torchrun`` agents on this machine rendezvousing on a free local port.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from expdna.digest.refs import ref
from expdna.manifest import load_manifest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torchrun_tiny.py"
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]

pytestmark = pytest.mark.slow  # each layout starts torch in two processes


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    env["PYTHONWARNINGS"] = "ignore"
    env["EXPDNA_CACHE_DIR"] = str(tmp_path / "cache")
    env["OMP_NUM_THREADS"] = "1"
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _lines(stdout: str) -> list[dict[str, Any]]:
    found = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return sorted(found, key=lambda line: line["rank"])


def _expdna_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "expdna" in line]


def _one_manifest(out: Path, ranks: list[dict[str, Any]]) -> Any:
    files = sorted(out.iterdir())
    assert len(files) == 1, files  # rank 0 wrote it; the other ranks wrote nothing
    manifest = load_manifest(files[0])
    assert manifest.dna is not None
    told = [(r["run_id"], r["dna"]) for r in ranks]
    assert told == [(manifest.run_id, manifest.dna.value)] * 2, (ranks, manifest.collection)
    return manifest


def test_one_node_two_ranks(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [*TORCHRUN, "--standalone", "--nproc-per-node", "2", str(EXAMPLE), "--output-dir", out],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert _expdna_lines(done.stderr) == [], done.stderr
    ranks = _lines(done.stdout)
    assert [r["rank"] for r in ranks] == [0, 1], done.stdout
    manifest = _one_manifest(out, ranks)
    runtime = manifest.runtime.model_dump()
    assert runtime["mode"] == "torch_distributed" and runtime["node_count"] == 1
    assert runtime["torch_distributed"] == {
        "world_size": 2,
        "backend": "gloo",
        "ranks_per_node": 2,
        "node_count": 1,
        "initialised": True,
    }
    (node,) = runtime["nodes"]
    assert node["role"] == "head" and node["resources"] == {"ranks": 2}
    assert node["fingerprint"] == ref(manifest.dna.sections["hardware"])
    assert manifest.collection.collectors["node_fingerprints"].status == "ok"
    assert set(manifest.metrics) == {"loss"}


def test_two_nodes_one_rank_each(tmp_path: Path) -> None:
    out = tmp_path / "out"
    port = _free_port()
    agents = [
        subprocess.Popen(
            [
                *TORCHRUN,
                "--nnodes",
                "2",
                "--node-rank",
                str(node),
                "--nproc-per-node",
                "1",
                "--master-addr",
                "127.0.0.1",
                "--master-port",
                str(port),
                str(EXAMPLE),
                "--output-dir",
                str(out),
            ],
            cwd=tmp_path,
            env=_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for node in (0, 1)
    ]
    results = []
    try:
        for agent in agents:
            stdout, stderr = agent.communicate(timeout=180)
            results.append((agent.returncode, stdout, stderr))
    finally:
        for agent in agents:
            if agent.poll() is None:
                agent.kill()
    for code, _, stderr in results:
        assert code == 0, stderr
        assert _expdna_lines(stderr) == [], stderr
    ranks = _lines(results[0][1] + results[1][1])
    manifest = _one_manifest(out, ranks)
    runtime = manifest.runtime.model_dump()
    assert runtime["mode"] == "torch_distributed" and runtime["node_count"] == 2
    assert runtime["torch_distributed"]["ranks_per_node"] == 1
    head, worker = runtime["nodes"]
    assert (head["role"], head["node_rank"], worker["role"], worker["node_rank"]) == (
        "head",
        0,
        "worker",
        1,
    )
    # Both "nodes" are this machine: the worker's own probe finds the head's fingerprint.
    assert worker["fingerprint"] == head["fingerprint"] == ref(manifest.dna.sections["hardware"])
    assert worker["hardware"] == head["hardware"]
    assert manifest.collection.collectors["node_fingerprints"].status == "ok"
