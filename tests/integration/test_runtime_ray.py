"""The runtime collector against a real local Ray and a real two-node Ray cluster."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from expdna.api import collect  # noqa: E402
from expdna.collectors.context import CollectContext  # noqa: E402
from expdna.collectors.runtime import collect_runtime  # noqa: E402
from expdna.manifest.dna import projections  # noqa: E402

pytestmark = pytest.mark.ray

# address="local": always a new instance, never a cluster some other process left running.
INIT = {"address": "local", "num_cpus": 1, "include_dashboard": False, "log_to_driver": False}
SLURM = {"SLURM_JOB_ID": "99", "SLURM_JOB_NUM_NODES": "1", "SLURM_NTASKS": "1"}


@pytest.fixture(scope="module", autouse=True)
def no_usage_stats() -> Iterator[None]:
    saved = os.environ.get("RAY_USAGE_STATS_ENABLED")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    yield
    if saved is None:
        os.environ.pop("RAY_USAGE_STATS_ENABLED", None)
    else:
        os.environ["RAY_USAGE_STATS_ENABLED"] = saved


def runtime(environ: dict[str, str] | None = None) -> dict[str, Any]:
    return collect_runtime(CollectContext(environ=environ or {}))


def test_ray_imported_but_not_initialised_is_local() -> None:
    assert not ray.is_initialized()
    assert runtime() == {"mode": "local"}
    assert runtime(SLURM)["mode"] == "slurm"


# Class-scoped: Ray starts once per class, and the two classes need different clusters.
@pytest.fixture(scope="class")
def local_ray() -> Iterator[None]:
    assert not ray.is_initialized(), "another test left Ray running"
    ray.init(**INIT)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="class")
def cluster() -> Iterator[Any]:
    from ray.cluster_utils import Cluster

    assert not ray.is_initialized(), "another test left Ray running"
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "include_dashboard": False,
        },
    )
    try:
        cluster.add_node(num_cpus=1, resources={"probe": 1})
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.mark.usefixtures("local_ray")
class TestLocalRay:
    def test_one_head_node(self) -> None:
        section = runtime()
        assert section["mode"] == "single_node_ray"
        assert section["node_count"] == 1
        (node,) = section["nodes"]
        assert node["role"] == "head"
        assert node["node_id"] == ray.get_runtime_context().get_node_id()
        assert node["resources"]["CPU"] == 1.0
        assert "node:__internal_head__" in node["resources"]
        # the node:<ip> resource repeats the address, which redaction must be able to hide
        assert not [k for k in node["resources"] if k.startswith("node:") and k[5:7] != "__"]
        assert f"node:{node['address']}" in ray.nodes()[0]["Resources"]
        assert node["address"] and node["hostname"]
        assert "slurm" not in section

    def test_ray_inside_slurm_keeps_the_geometry(self) -> None:
        section = runtime(SLURM)
        assert section["mode"] == "single_node_ray" and section["node_count"] == 1
        assert section["slurm"] == {"job_id": 99, "nnodes": 1, "ntasks": 1}

    def test_ids_and_addresses_stay_out_of_the_dna(self) -> None:
        manifest = collect(collectors=["runtime"], environ={})
        assert manifest.collection.collectors["runtime"].status == "ok"
        assert manifest.runtime.nodes[0].model_extra["node_id"]  # type: ignore[index]
        projected = projections(manifest)["runtime"]
        assert projected["mode"] == "single_node_ray" and projected["node_count"] == 1
        (node,) = projected["nodes"]
        assert set(node) == {"role", "resources"}
        assert node["role"] == "head"
        assert not [k for k in node["resources"] if k.startswith("node:") or "memory" in k]


@pytest.mark.slow
class TestTwoNodeCluster:
    def test_two_nodes_on_one_box_read_as_multi_node(self, cluster: Any) -> None:
        section = runtime()
        assert section["mode"] == "multi_node_ray"
        assert section["node_count"] == 2
        head, worker = section["nodes"]
        assert (head["role"], worker["role"]) == ("head", "worker")
        assert worker["resources"]["probe"] == 1.0 and "probe" not in head["resources"]
        assert head["node_id"] != worker["node_id"]
        # one machine: the same address for both, so only the count can tell them apart
        assert head["address"] == worker["address"]

    def test_dead_nodes_are_not_counted(self, cluster: Any) -> None:
        worker = next(n for n in cluster.list_all_nodes() if not n.head)
        cluster.remove_node(worker)
        deadline = time.monotonic() + 30
        while runtime()["node_count"] != 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        section = runtime()
        assert (section["mode"], section["node_count"]) == ("single_node_ray", 1)
        assert [n["role"] for n in section["nodes"]] == ["head"]
        assert any(not n["Alive"] for n in ray.nodes())  # Ray still lists the dead one
