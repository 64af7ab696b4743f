"""torch.distributed: who writes, which node answers for its hardware, what rank 0 records.

The exchange runs over a real ``torch.distributed.HashStore`` (the in-process store with
the TCPStore's interface); the launcher layouts are read from real variable sets as
``torchrun`` writes them. tests/integration/test_torchrun.py runs the real launcher.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import torch.distributed as dist

from expdna.collectors.distributed import Layout, layout
from expdna.integrations import start, track
from expdna.integrations.torch_nodes import Peers, gather_nodes

TORCHRUN_RANK1 = {
    "RANK": "1",
    "WORLD_SIZE": "4",
    "LOCAL_RANK": "1",
    "LOCAL_WORLD_SIZE": "2",
    "GROUP_RANK": "0",
    "GROUP_WORLD_SIZE": "2",
    "TORCHELASTIC_RUN_ID": "abc",
}
LOCAL = {"fingerprint": "blake3:" + "a" * 64, "hardware": {"cpu_count": 2}, "warnings": []}
OTHER = {"fingerprint": "blake3:" + "b" * 64, "hardware": {"cpu_count": 8}, "warnings": []}


def test_the_layout_comes_from_torchrun_variables() -> None:
    found = layout(TORCHRUN_RANK1)
    assert found == Layout(
        rank=1,
        world_size=4,
        local_rank=1,
        local_world_size=2,
        node_rank=0,
        node_count=2,
        backend=None,
        initialised=False,
    )
    assert not found.writes and not found.leads_node
    assert found.section() == {
        "world_size": 4,
        "backend": None,
        "ranks_per_node": 2,
        "node_count": 2,
        "initialised": False,
    }


def test_deepspeed_variables_give_the_same_layout() -> None:
    # What deepspeed's launch.py gives rank 1 of two nodes of two (Horovod's names).
    deepspeed = {
        "RANK": "1",
        "WORLD_SIZE": "4",
        "LOCAL_RANK": "1",
        "LOCAL_SIZE": "2",
        "CROSS_RANK": "0",
        "CROSS_SIZE": "2",
    }
    assert layout(deepspeed) == layout(TORCHRUN_RANK1)


def test_srun_variables_count_and_a_single_process_is_no_job() -> None:
    srun = {"SLURM_PROCID": "3", "WORLD_SIZE": "8", "SLURM_LOCALID": "0", "SLURM_NODEID": "1"}
    found = layout(srun)
    assert found is not None and found.rank == 3 and found.leads_node and found.node_rank == 1
    assert layout({"RANK": "0", "WORLD_SIZE": "1"}) is None
    assert layout({"LOCAL_RANK": "0"}) is None
    assert layout({}) is None


def _rank0(node_count: int = 2, **overrides: Any) -> Peers:
    fields: dict[str, Any] = dict(
        rank=0,
        world_size=2 * node_count,
        local_rank=0,
        local_world_size=2,
        node_rank=0,
        node_count=node_count,
    )
    fields.update(overrides)
    return Peers(Layout(**fields))


def test_rank0_records_each_node_a_leader_posted() -> None:
    store = dist.HashStore()
    rank0 = _rank0(3)
    for node in (1, 2):
        leader = Peers(
            Layout(
                rank=2 * node,
                world_size=6,
                local_rank=0,
                local_world_size=2,
                node_rank=node,
                node_count=3,
            ),
            sequence=rank0.sequence,
        )
        leader.post_node({"ranks": 2, **OTHER}, store=store)
    found = gather_nodes(rank0, deadline_s=2.0, local=LOCAL, store=store)
    assert [(n["role"], n["node_rank"], n["fingerprint"]) for n in found.nodes] == [
        ("head", 0, LOCAL["fingerprint"]),
        ("worker", 1, OTHER["fingerprint"]),
        ("worker", 2, OTHER["fingerprint"]),
    ]
    assert all(n["resources"] == {"ranks": 2} for n in found.nodes)
    assert found.nodes[1]["hardware"] == {"cpu_count": 8}
    assert found.record()["status"] == "ok" and found.warnings == []


def test_a_node_that_never_answers_is_unknown_after_the_deadline() -> None:
    store = dist.HashStore()
    started = time.perf_counter()
    found = gather_nodes(_rank0(2), deadline_s=0.3, local=LOCAL, store=store)
    waited = time.perf_counter() - started
    assert 0.3 <= waited < 2.0
    head, missing = found.nodes
    assert head["fingerprint"] == LOCAL["fingerprint"]
    assert missing["fingerprint"] is None and missing["unknown"] == "no answer within 0.3 s"
    assert found.record()["status"] == "partial"
    assert found.warnings == ["node 1: no answer within 0.3 s; recorded as unknown"]


def test_without_node_ranks_the_other_nodes_are_unknown_at_once() -> None:
    found = gather_nodes(
        _rank0(2, node_rank=None), deadline_s=5.0, local=LOCAL, store=dist.HashStore()
    )
    assert found.nodes[1]["unknown"] == "no node rank given"
    assert found.duration_ms < 1000


def test_the_run_id_reaches_other_ranks_through_the_store() -> None:
    store = dist.HashStore()
    rank0, rank1 = _rank0(1), Peers(layout(TORCHRUN_RANK1) or Layout(rank=1, world_size=2))
    rank1.sequence = rank0.sequence
    assert rank1.lookup(store=store) is None  # not announced yet: no wait
    rank0.announce("r1", "d1", store=store)
    assert rank1.lookup(store=store) == {"run_id": "r1", "dna": "d1"}
    assert Peers(rank1.layout).lookup(store=store) is None  # the next run's key is its own


def test_other_ranks_write_nothing_and_never_raise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in TORCHRUN_RANK1.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "out"
    started = time.perf_counter()
    handle = start({"lr": 0.1}, output_dir=out)
    assert handle is not None and handle.manifest is None and handle.peers is not None
    handle.add_runtime()  # not a node leader: nothing to post
    assert handle.run_id is None and handle.dna is None  # no process group: nobody told it
    handle.finish(metrics={"loss": 1.0})
    assert handle.pin(tmp_path) is None
    with track({"lr": 0.1}, output_dir=out) as run:
        assert run.manifest is None
    assert time.perf_counter() - started < 2.0  # no collection on these ranks
    assert not out.exists()
    assert handle.warnings == []


def test_a_node_leader_without_a_process_group_warns_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader = {**TORCHRUN_RANK1, "RANK": "2", "LOCAL_RANK": "0", "GROUP_RANK": "1"}
    for name, value in leader.items():
        monkeypatch.setenv(name, value)
    handle = start({"lr": 0.1}, output_dir=tmp_path / "out", deadline_s=2.0)
    assert handle is not None
    handle.add_runtime()
    assert len(handle.warnings) == 1
    assert "torch.distributed is not initialised" in handle.warnings[0]
    assert not (tmp_path / "out").exists()
