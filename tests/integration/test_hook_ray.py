"""The hook around a real ``ray.init``: a local Ray, and a real two-node cluster on this box.

Each Ray setup starts once per class; its fixture hands the tests a ``launch`` function so
a test can call ``expdna.start`` *before* Ray is up, as a training script does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from expdna.integrations import RunHandle, start, track  # noqa: E402
from expdna.integrations.topology import FINGERPRINTS  # noqa: E402
from expdna.manifest import compute_dna, load_manifest  # noqa: E402

# Starting Ray takes several seconds here, a cluster more: all of it is slow.
pytestmark = [pytest.mark.ray, pytest.mark.slow]

Launch = Callable[[], None]


@pytest.fixture(scope="module", autouse=True)
def quiet_ray() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("RAY_USAGE_STATS_ENABLED", "EXPDNA_STORE")}
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ.pop("EXPDNA_STORE", None)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(autouse=True)
def sigint_handler_kept() -> Iterator[None]:
    """Put back this process's SIGINT handler: ``Tuner.fit`` installs its own ("Stop signal
    received... ending Ray Tune run") and leaves it, which swallowed every Ctrl-C of a later
    test in the same pytest process."""
    saved = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, saved)


@pytest.fixture(scope="class")
def local_ray() -> Iterator[Launch]:
    assert not ray.is_initialized(), "another test left Ray running"

    def launch() -> None:
        if not ray.is_initialized():
            # address="local": our own instance even if another Ray runs on this machine
            ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)

    try:
        yield launch
    finally:
        ray.shutdown()


@pytest.fixture(scope="class")
def cluster() -> Iterator[tuple[Any, Launch]]:
    from ray.cluster_utils import Cluster

    assert not ray.is_initialized(), "another test left Ray running"
    nodes = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "include_dashboard": False,
        },
    )

    def launch() -> None:
        if not ray.is_initialized():
            ray.init(address=nodes.address, log_to_driver=False)

    try:
        nodes.add_node(num_cpus=1)
        nodes.wait_for_nodes()
        yield nodes, launch
    finally:
        ray.shutdown()
        nodes.shutdown()


def _started(tmp_path: Path, **kwargs: Any) -> RunHandle:
    handle = start({"lr": 0.1, "seed": 1}, output_dir=tmp_path, **kwargs)
    assert handle is not None and handle.manifest is not None
    return handle


def _local_hardware(handle: RunHandle) -> str:
    assert handle.manifest is not None and handle.manifest.dna is not None
    return "blake3:" + handle.manifest.dna.sections["hardware"]


def _check_file(handle: RunHandle) -> None:
    assert handle.path is not None
    loaded = load_manifest(handle.path)
    assert compute_dna(loaded).value == handle.dna == loaded.dna.value  # type: ignore[union-attr]


@pytest.fixture
def tune_storage() -> Iterator[str]:
    """Where Tune keeps its experiment state: outside pytest's temporary directory, whose
    JSON files the session's secret scan reads (Tune's state holds pickles as hex)."""
    with tempfile.TemporaryDirectory(prefix="expdna-tune-") as storage:
        yield storage


class TestLocalRay:
    def test_start_then_ray_init_then_add_runtime_is_single_node_ray(
        self, local_ray: Launch, tmp_path: Path
    ) -> None:
        handle = _started(tmp_path)
        assert handle.manifest is not None and handle.manifest.runtime.mode == "local"
        before = handle.dna
        local_ray()
        handle.add_runtime()
        assert handle.warnings == []
        runtime = handle.manifest.runtime
        assert (runtime.mode, runtime.node_count) == ("single_node_ray", 1)
        (node,) = runtime.nodes
        extra = node.model_extra or {}
        assert node.role == "head"
        assert extra["node_id"] == ray.get_runtime_context().get_node_id()
        assert extra["fingerprint"] == _local_hardware(handle)
        assert extra["hardware"]["cpu_count"] == os.cpu_count()
        assert handle.manifest.collection.collectors[FINGERPRINTS].status == "ok"
        assert handle.dna != before  # the runtime section is part of the DNA
        _check_file(handle)

    def test_track_inside_ray(self, local_ray: Launch, tmp_path: Path) -> None:
        local_ray()
        with track({"lr": 0.1}, output_dir=tmp_path) as run:
            run.log_final(val_loss=0.5)
        assert run.path is not None
        loaded = load_manifest(run.path)
        assert loaded.runtime.mode == "single_node_ray" and loaded.metrics == {"val_loss": 0.5}

    def test_trials_of_a_ray_tune_search_get_one_dna_per_setting(
        self, local_ray: Launch, tmp_path: Path, tune_storage: str
    ) -> None:
        tune = pytest.importorskip("ray.tune", reason="ray[tune] (pandas) is not installed")

        local_ray()
        out = tmp_path / "manifests"

        def trainable(config: dict[str, Any]) -> None:
            import dataclasses

            import expdna

            # A dataclass counts as argv's (HfArgumentParser), except in a trial.
            Settings = dataclasses.make_dataclass("Settings", [("lr", float), ("output_dir", str)])
            trial = tune.get_context().get_trial_id()
            settings = Settings(lr=config["lr"], output_dir=str(out / trial))
            with expdna.track(settings, output_dir=out / trial) as run:
                weight = 0.0
                for _ in range(50):
                    weight -= settings.lr * 2 * (weight - 2.0)
                run.log_final(loss=(weight - 2.0) ** 2)

        tuner = tune.Tuner(
            trainable,
            param_space={"lr": tune.grid_search([0.01, 0.1, 0.1])},
            # Each trial in a worker of its own: Ray's words in each worker's argv (worker
            # id, ports, startup token) differ, the setup does not.
            tune_config=tune.TuneConfig(reuse_actors=False, max_concurrent_trials=1),
            run_config=tune.RunConfig(storage_path=tune_storage, name="search"),
        )
        results = tuner.fit()
        assert not results.errors
        manifests_paths = sorted(out.glob("*/manifest_*.json"))
        manifests = [load_manifest(p) for p in manifests_paths]
        assert len(manifests) == 3
        assert {m.config.model_dump().get("settings_source") for m in manifests} == {"code"}
        dnas: dict[float, set[str]] = {}
        for manifest in manifests:
            assert manifest.dna is not None and compute_dna(manifest) == manifest.dna
            dnas.setdefault(manifest.config.resolved_args["lr"], set()).add(manifest.dna.value)
        assert len(dnas[0.01]) == 1 and len(dnas[0.1]) == 1  # one setting, one DNA
        assert dnas[0.01] != dnas[0.1]  # two settings, two DNAs
        argvs = {tuple(m.command.argv) for m in manifests}
        assert len(argvs) == 3  # the words differ: the DNA is right not to hold them
        # A worker's command reruns nothing: the driver that started it is not recorded.
        check = subprocess.run(
            [str(Path(sys.executable).parent / "expdna"), "check", str(manifests_paths[0])],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert check.returncode == 1
        assert (
            "FAIL command.entry: the command is a ray worker's: the driver that started it is "
            "not recorded; rerun the driver" in check.stdout
        ), check.stdout

    def test_lightning_hparams_of_a_ray_tune_trial_count(
        self, local_ray: Launch, tmp_path: Path, tune_storage: str
    ) -> None:
        tune = pytest.importorskip("ray.tune", reason="ray[tune] (pandas) is not installed")
        pytest.importorskip("lightning")
        local_ray()
        out = tmp_path / "manifests"

        def trainable(config: dict[str, Any]) -> None:
            import lightning.pytorch as pl
            import torch

            from expdna.integrations.lightning import ExpdnaCallback

            class Tiny(pl.LightningModule):
                def __init__(self, lr: float) -> None:
                    super().__init__()
                    self.save_hyperparameters()
                    self.layer = torch.nn.Linear(2, 1)

                def training_step(self, batch: Any, _: int) -> Any:
                    x, y = batch
                    return torch.nn.functional.mse_loss(self.layer(x), y)

                def configure_optimizers(self) -> Any:
                    return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

            data = torch.utils.data.TensorDataset(torch.ones(4, 2), torch.ones(4, 1))
            trial = tune.get_context().get_trial_id()
            trainer = pl.Trainer(
                max_epochs=1,
                accelerator="cpu",
                devices=1,
                logger=False,
                enable_checkpointing=False,
                enable_progress_bar=False,
                enable_model_summary=False,
                callbacks=[ExpdnaCallback(output_dir=out / trial)],
            )
            trainer.fit(Tiny(config["lr"]), torch.utils.data.DataLoader(data, batch_size=2))

        tuner = tune.Tuner(
            trainable,
            param_space={"lr": tune.grid_search([0.01, 0.1])},
            tune_config=tune.TuneConfig(reuse_actors=True, max_concurrent_trials=1),
            run_config=tune.RunConfig(storage_path=tune_storage, name="pl"),
        )
        assert not tuner.fit().errors
        manifests = [load_manifest(p) for p in sorted(out.glob("*/manifest_*.json"))]
        assert len(manifests) == 2
        assert {m.config.model_dump().get("settings_source") for m in manifests} == {"code"}
        assert {m.config.resolved_args["lr"] for m in manifests} == {0.01, 0.1}
        assert len({m.dna.value for m in manifests if m.dna is not None}) == 2

    # Last in the class: it shuts Ray down.
    def test_ray_shut_down_between_phases_records_local(
        self, local_ray: Launch, tmp_path: Path
    ) -> None:
        local_ray()
        handle = _started(tmp_path)
        ray.shutdown()
        handle.add_runtime()
        handle.finish(metrics={"val_loss": 1.0})
        assert handle.manifest is not None and handle.manifest.runtime.mode == "local"
        assert handle.warnings == []
        assert FINGERPRINTS not in handle.manifest.collection.collectors
        _check_file(handle)


class TestTwoNodeCluster:
    def test_every_node_gets_a_fingerprint_from_a_task_pinned_to_it(
        self, cluster: tuple[Any, Launch], tmp_path: Path
    ) -> None:
        _, launch = cluster
        handle = _started(tmp_path)
        launch()
        handle.add_runtime()
        assert handle.warnings == []
        assert handle.manifest is not None
        runtime = handle.manifest.runtime
        assert (runtime.mode, runtime.node_count) == ("multi_node_ray", 2)
        assert [n.role for n in runtime.nodes] == ["head", "worker"]
        extras = [n.model_extra or {} for n in runtime.nodes]
        alive = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
        assert {e["node_id"] for e in extras} == alive
        # Both nodes are this machine: the worker's probe computed the driver's digest.
        assert [e["fingerprint"] for e in extras] == [_local_hardware(handle)] * 2
        assert handle.manifest.collection.collectors[FINGERPRINTS].status == "ok"
        _check_file(handle)

    # Last in the class: it kills the worker node.
    def test_a_node_that_dies_mid_collection_is_a_warning_not_a_hang(
        self, cluster: tuple[Any, Launch], tmp_path: Path
    ) -> None:
        nodes, launch = cluster
        launch()
        worker = next(n for n in nodes.list_all_nodes() if not n.head)
        worker_id = worker.node_id
        nodes.remove_node(worker, allow_graceful=False)  # SIGKILL: Ray has not noticed yet
        handle = _started(tmp_path, deadline_s=1.5)
        began = time.monotonic()
        handle.add_runtime()
        elapsed = time.monotonic() - began
        assert handle.manifest is not None
        assert handle.manifest.runtime.node_count == 2  # still listed as alive
        assert elapsed < 2 * 1.5 + 3  # the guard's bound, plus room for a loaded machine
        status = handle.manifest.collection.collectors[FINGERPRINTS]
        assert status.status == "partial"
        assert len(status.warnings) == 1 and status.warnings[0].startswith(
            f"node {worker_id[:12]}:"
        )
        fingerprints = {
            (n.model_extra or {})["node_id"]: (n.model_extra or {}).get("fingerprint")
            for n in handle.manifest.runtime.nodes
        }
        assert fingerprints[worker_id] is None
        assert [v for k, v in fingerprints.items() if k != worker_id] == [_local_hardware(handle)]
        assert any(w.startswith("node fingerprints: node") for w in handle.warnings)
        _check_file(handle)
