"""The runtime collector without Ray: local, Slurm geometry, node roles from node entries.

A real local Ray and a real two-node cluster are in tests/integration/test_runtime_ray.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from expdna.collectors.context import CollectContext
from expdna.collectors.runtime import describe_nodes, node_role, slurm_geometry

SLURM = {
    "SLURM_JOB_ID": "48213",
    "SLURM_JOB_NUM_NODES": "4",
    "SLURM_NNODES": "4",
    "SLURM_NTASKS": "32",
    "SLURM_NTASKS_PER_NODE": "8",
    "SLURM_GPUS_PER_NODE": "h100:8",
    "SLURM_CPUS_PER_TASK": "12",
    "SLURM_JOB_PARTITION": "gpu",
    "SLURM_NODELIST": "gn[01-04]",
}

# Collect in a fresh interpreter: this process may have imported Ray for other tests.
_COLLECT = (
    "import json, sys\n"
    "from expdna.collectors.context import CollectContext\n"
    "from expdna.collectors.runtime import collect_runtime\n"
    "section = collect_runtime(CollectContext(environ=json.loads(sys.argv[1])))\n"
    "print(json.dumps({'section': section, 'ray_imported': 'ray' in sys.modules}))\n"
)


def collect_fresh(environ: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _COLLECT, json.dumps(environ)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return dict(json.loads(done.stdout))


def test_without_ray_or_slurm_the_run_is_local_and_ray_is_never_imported() -> None:
    out = collect_fresh({"PATH": "/usr/bin"})
    assert out == {"section": {"mode": "local"}, "ray_imported": False}


def test_a_slurm_allocation_without_ray() -> None:
    out = collect_fresh(SLURM)
    assert out["ray_imported"] is False
    assert out["section"] == {
        "mode": "slurm",
        "node_count": 4,
        "slurm": {
            "job_id": 48213,
            "nnodes": 4,
            "ntasks": 32,
            "ntasks_per_node": 8,
            "gpus_per_node": "h100:8",
            "cpus_per_task": 12,
            "partition": "gpu",
        },
    }


def test_slurm_geometry_older_names_and_compressed_task_counts() -> None:
    assert slurm_geometry({}) is None
    assert slurm_geometry({"SLURM_NNODES": "2"}) is None  # no job, no geometry
    assert slurm_geometry(
        {
            "SLURM_JOBID": "7",
            "SLURM_NNODES": "2",
            "SLURM_NPROCS": "8",
            "SLURM_TASKS_PER_NODE": "4(x2)",
            "SLURM_CPUS_PER_TASK": " ",
        }
    ) == {"job_id": 7, "nnodes": 2, "ntasks": 8, "ntasks_per_node": 4}
    # uneven task counts stay as Slurm wrote them
    assert slurm_geometry({"SLURM_JOB_ID": "7", "SLURM_TASKS_PER_NODE": "2(x3),1"}) == {
        "job_id": 7,
        "ntasks_per_node": "2(x3),1",
    }
    assert CollectContext(environ=SLURM).environ["SLURM_JOB_ID"] == "48213"


def test_node_roles_and_alive_filter() -> None:
    # keys as ray.nodes() writes them (REFERENCE.md §4); IsHeadNode where a version has it
    head: dict[str, Any] = {
        "NodeID": "bb",
        "Alive": True,
        "NodeManagerAddress": "127.0.0.1",
        "NodeManagerHostname": "box",
        "Resources": {"CPU": 1.0, "node:__internal_head__": 1.0},
    }
    worker: dict[str, Any] = {
        "NodeID": "aa",
        "Alive": True,
        "NodeManagerAddress": "10.1.2.3",
        "NodeManagerHostname": "box",
        "Resources": {"CPU": 2.0, "GPU": 1.0, "node:10.1.2.3": 1.0},
    }
    dead = {"NodeID": "cc", "Alive": False, "Resources": {"CPU": 1.0}}
    flagged = {"NodeID": "dd", "alive": True, "IsHeadNode": True, "Resources": {}}
    assert [node_role(n) for n in (head, worker, flagged)] == ["head", "worker", "head"]
    assert node_role({"is_head_node": True}) == "head"
    nodes = describe_nodes([worker, dead, head])
    assert [(n["node_id"], n["role"]) for n in nodes] == [("bb", "head"), ("aa", "worker")]
    assert nodes[1] == {
        "role": "worker",
        "resources": {"CPU": 2.0, "GPU": 1.0},
        "node_id": "aa",
        "address": "10.1.2.3",
        "hostname": "box",
    }
    nodes[1]["resources"]["CPU"] = 0.0
    assert worker["Resources"]["CPU"] == 2.0  # a copy, not Ray's own dict
