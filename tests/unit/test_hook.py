"""The training hook: what it records, and that nothing inside it reaches the training code."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from blake3 import blake3

import expdna
from expdna.collectors import CollectContext, Collector, default_registry
from expdna.compare.rerun import expand_home
from expdna.integrations import RunHandle, start, track
from expdna.integrations.recording import guarded
from expdna.manifest import compute_dna, load_manifest
from expdna.store.config import StoreConfig
from expdna.store.queries import parse_where
from tests.factories import git

BROKEN_INDEX = "postgresql+psycopg://nobody@127.0.0.1:1/x"


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name.startswith("expdna")
    ]


@pytest.fixture(autouse=True)
def no_store_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPDNA_STORE", raising=False)
    monkeypatch.delenv("EXPDNA_INDEX_URL", raising=False)


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo: Path) -> Path:
    """Run from a directory outside any repository; the training script lives in ``repo``.

    The checkout these tests run in changes while they run (it is being worked on), so
    tests comparing DNAs take their code section from the fixed ``repo`` instead.
    """
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return repo / "train.py"


def _args(**overrides: Any) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output-dir", default="unset")
    args = parser.parse_args([])
    for key, value in overrides.items():
        setattr(args, key, value)
    return args


def test_start_records_the_parsed_args_not_argv(
    elsewhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["train.py", "--lr", "0.1", "--output-dir", "x"])
    handle = start(
        _args(output_dir=str(tmp_path / "out")), output_dir=tmp_path / "out", caller_file=elsewhere
    )
    assert handle is not None and handle.manifest is not None
    assert handle.manifest.config.resolved_args == {
        "lr": 0.1,
        "seed": 7,
        "output_dir": str(tmp_path / "out"),  # the default seed is in
    }
    assert handle.manifest.command.argv == ["train.py", "--lr", "0.1", "--output-dir", "x"]
    # Written at once, status "running": a process that dies still leaves its manifest.
    assert handle.path is not None
    assert json.loads(handle.path.read_text())["status"]["state"] == "running"


def test_the_dna_ignores_the_output_dir_and_follows_the_learning_rate(
    elsewhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def dna(*words: str, **overrides: Any) -> str:
        # The command's words are the arguments' identity (DNA version 3), as generate sees
        # them; a value only the process knows (a default) is recorded outside it.
        monkeypatch.setattr(sys, "argv", ["train.py", *words])
        handle = start(_args(**overrides), output_dir=None, caller_file=elsewhere)
        assert handle is not None and handle.dna is not None
        return handle.dna

    assert dna("--output-dir", "/runs/a") == dna("--output-dir", "/runs/b", output_dir="/runs/b")
    assert dna("--output-dir", "/runs/a") != dna("--output-dir", "/runs/a", "--lr", "0.2", lr=0.2)
    assert dna("--output-dir", "/runs/a") == dna("--output-dir", "/runs/a", lr=0.2)


def test_resolved_args_are_redacted_like_everything_else(elsewhere: Path, tmp_path: Path) -> None:
    token = "hf_" + "abcdefghijklmnopqrstuvwxyzABCDEFGH"
    args = {
        "lr": 0.1,
        "hub_token": token,
        "db": "postgresql://alice:s3cret@db.example.com/x",
        "wandb_api_key": "0123456789abcdef0123456789abcdef01234567",
    }
    handle = start(args, output_dir=tmp_path / "out", caller_file=elsewhere)
    assert handle is not None and handle.manifest is not None
    handle.add_runtime()
    assert handle.path is not None
    text = handle.path.read_text()
    for secret in (token, "s3cret", "0123456789abcdef0123456789abcdef01234567"):
        assert secret not in text
    recorded = handle.manifest.config.resolved_args
    assert recorded["lr"] == 0.1 and recorded["db"] == "postgresql://***@db.example.com/x"
    assert {"config.resolved_args.hub_token", "config.resolved_args.wandb_api_key"} <= set(
        handle.manifest.collection.redacted
    )


def test_add_runtime_without_ray_records_local_and_writes_a_manifest_that_recomputes(
    elsewhere: Path, tmp_path: Path
) -> None:
    handle = start(_args(), output_dir=tmp_path / "out" / "deeper", caller_file=elsewhere)
    assert handle is not None
    assert handle.add_runtime() is handle
    assert handle.warnings == []
    assert handle.path == tmp_path / "out" / "deeper" / f"manifest_{handle.run_id}.json"
    loaded = load_manifest(handle.path)
    assert loaded.runtime.mode == "local"
    assert compute_dna(loaded).value == handle.dna == loaded.dna.value  # type: ignore[union-attr]
    assert [p.name for p in handle.path.parent.iterdir()] == [handle.path.name]  # no temp left


def test_finish_records_metrics_outside_the_dna(elsewhere: Path, tmp_path: Path) -> None:
    import torch

    handle = start(_args(), output_dir=tmp_path, caller_file=elsewhere)
    assert handle is not None
    handle.add_runtime()
    before = handle.dna
    handle.log_final(epochs=3)
    handle.finish(metrics={"val_loss": torch.tensor(0.5), "acc": float("nan")})
    assert handle.dna == before
    assert handle.path is not None
    doc = json.loads(handle.path.read_text())
    assert doc["metrics"] == {"epochs": 3, "val_loss": 0.5, "acc": "<non-finite:nan>"}
    assert compute_dna(load_manifest(handle.path)).value == before


def test_finish_without_add_runtime_still_writes(elsewhere: Path, tmp_path: Path) -> None:
    handle = start(_args(), output_dir=tmp_path, caller_file=elsewhere)
    assert handle is not None
    handle.finish(metrics={"val_loss": 1.0})
    assert handle.path is not None and load_manifest(handle.path).metrics == {"val_loss": 1.0}


def test_track_writes_on_entry_and_records_metrics_on_exit(elsewhere: Path, tmp_path: Path) -> None:
    with expdna.track(_args(), output_dir=tmp_path, caller_file=elsewhere) as run:
        assert run.path is not None and run.path.exists()  # written before training starts
        run.metrics["val_loss"] = 0.25
    assert load_manifest(run.path).metrics == {"val_loss": 0.25}


def test_track_lets_the_training_exception_through_and_still_records(
    elsewhere: Path, tmp_path: Path
) -> None:
    class TrainingDiverged(Exception):
        pass

    with (
        pytest.raises(TrainingDiverged),
        track(_args(), output_dir=tmp_path, caller_file=elsewhere) as run,
    ):
        run.log_final(step=12)
        raise TrainingDiverged("loss is nan")
    assert run.path is not None and load_manifest(run.path).metrics == {"step": 12}


def test_the_caller_file_finds_the_project_repo_not_the_cwd(repo: Path, tmp_path: Path) -> None:
    """A real script in a real repo, started from another directory, in a real process."""
    script = repo / "train.py"
    script.write_text(
        "import json, sys\n"
        "import expdna\n"
        "run = expdna.start({'lr': 1}, output_dir=sys.argv[1])\n"
        "run.add_runtime()\n"
        "heavy = [m for m in ('torch', 'ray', 'pyarrow', 'sqlalchemy') if m in sys.modules]\n"
        "print(json.dumps({'path': str(run.path), 'heavy': heavy}))\n"
    )
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "out")],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    result = json.loads(done.stdout)
    manifest = load_manifest(result["path"])
    assert list(manifest.code) == ["proj"]
    assert manifest.code["proj"].commit == git(repo, "rev-parse", "HEAD")
    # The command a shell can run: the interpreter too (sys.orig_argv), not sys.argv alone.
    # (a path under $HOME is recorded as ~/...: expanded as rerun expands it)
    argv = [expand_home(word) for word in manifest.command.argv]
    assert argv == [sys.executable, str(script), str(tmp_path / "out")]
    assert manifest.config.resolved_args == {"lr": 1}
    assert result["heavy"] == []  # no Ray, no store: the hook imports nothing heavy
    assert done.stderr == ""  # no warning: an unconfigured logger would print it here


# --- failures become warnings ------------------------------------------------------------


def test_an_unwritable_output_dir_is_a_warning(
    elsewhere: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    handle = start(_args(), output_dir=blocker / "out", caller_file=elsewhere)
    assert handle is not None
    handle.add_runtime()
    handle.finish(metrics={"val_loss": 1.0})
    assert handle.path is None
    assert handle.dna is not None  # the run is still described
    writes = [w for w in handle.warnings if w.startswith("writing the manifest")]
    # start, add_runtime, finish: each tried, each a warning
    assert len(writes) == 3 and "NotADirectoryError" in writes[0]
    assert any("writing the manifest" in m for m in _warnings(caplog))


def test_a_broken_store_url_is_a_warning_and_the_file_is_still_written(
    elsewhere: Path, tmp_path: Path
) -> None:
    handle = start(
        _args(),
        output_dir=tmp_path / "out",
        store=tmp_path / "store",
        index_url=BROKEN_INDEX,
        caller_file=elsewhere,
    )
    assert handle is not None
    handle.add_runtime()
    handle.finish(metrics={"val_loss": 1.0})
    assert handle.path is not None and load_manifest(handle.path).metrics == {"val_loss": 1.0}
    (warning,) = handle.warnings  # one warning: the dead store is not tried again
    assert warning.startswith("recording the run in the store: IndexUnavailableError")
    assert "127.0.0.1" in warning and "port 1" in warning


def test_the_store_comes_from_the_environment(
    elsewhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXPDNA_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("EXPDNA_INDEX_URL", BROKEN_INDEX)
    handle = start(_args(), output_dir=None, caller_file=elsewhere)
    assert handle is not None
    assert handle.store.target == StoreConfig(tmp_path / "store", BROKEN_INDEX)
    assert not any("will not be saved" in w for w in handle.warnings)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # let the abandoned collector thread end


def test_a_hanging_collector_is_abandoned_at_the_deadline(
    elsewhere: Path, tmp_path: Path, release: threading.Event
) -> None:
    def hang(ctx: CollectContext) -> dict[str, Any]:
        release.wait(60)
        return {"never": True}

    registry = default_registry(plugins=False)
    registry.add(Collector("hang", "hardware", hang))
    began = time.monotonic()
    handle = start(
        _args(), output_dir=tmp_path, registry=registry, deadline_s=0.5, caller_file=elsewhere
    )
    assert handle is not None
    handle.add_runtime()
    assert time.monotonic() - began < 5  # 0.5 s deadline; generous for a loaded machine
    assert handle.manifest is not None and handle.path is not None
    assert handle.manifest.collection.collectors["hang"].status == "timeout"
    assert "never" not in handle.manifest.hardware.model_dump()


def test_guarded_abandons_a_call_that_hangs(release: threading.Event) -> None:
    began = time.monotonic()
    result, warning = guarded("recording the run in the store", lambda: release.wait(60), 0.2)
    assert time.monotonic() - began < 2
    assert result is None and warning is not None and "no answer within 0.2 s" in warning


def _bad_hardware(ctx: CollectContext) -> dict[str, Any]:
    return {"gpus": "not a list of GPUs"}  # fails validation: no manifest can be built


def test_start_returns_none_with_exactly_one_warning_when_collection_is_impossible(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    registry = default_registry(plugins=False)
    registry.add(Collector("bad", "hardware", _bad_hardware))
    with caplog.at_level(logging.WARNING):
        handle = start(_args(), output_dir=tmp_path, registry=registry, collectors=["bad"])
    assert handle is None
    messages = _warnings(caplog)
    assert len(messages) == 1 and messages[0].startswith("expdna: no manifest for this run")
    assert list(tmp_path.iterdir()) == []


def test_track_yields_an_inert_handle_when_collection_is_impossible(tmp_path: Path) -> None:
    registry = default_registry(plugins=False)
    registry.add(Collector("bad", "hardware", _bad_hardware))
    ran = False
    with track(_args(), output_dir=tmp_path, registry=registry, collectors=["bad"]) as run:
        run.log_final(val_loss=1.0)
        assert run.pin(tmp_path / "nothing.pt") is None
        ran = True
    assert ran and run.dna is None and run.path is None
    assert list(tmp_path.iterdir()) == []


def test_unsupported_args_fall_back_to_argv_with_a_warning(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["train.py", "--lr", "0.3"])
    handle = start(["--lr", "0.3"], output_dir=None, caller_file=elsewhere)
    assert handle is not None and handle.manifest is not None
    assert handle.manifest.config.resolved_args == {"lr": 0.3}
    assert any("cannot read arguments from a list" in w for w in handle.warnings)


def test_bad_settings_are_warnings_not_errors(elsewhere: Path) -> None:
    handle = start(_args(), output_dir=None, deadline_s=-1, caller_file=elsewhere)
    assert handle is not None and handle.deadline_s == 4.0
    assert any("deadline_s=-1" in w for w in handle.warnings)
    assert any("will not be saved" in w for w in handle.warnings)


def test_pin_digests_the_file_and_warns_without_a_store(elsewhere: Path, tmp_path: Path) -> None:
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"weights" * 1000)
    handle = start(_args(), output_dir=None, caller_file=elsewhere)
    assert handle is not None
    assert handle.pin(checkpoint) == "blake3:" + blake3(checkpoint.read_bytes()).hexdigest()
    assert any(w.startswith("pin: no store configured") for w in handle.warnings)
    assert handle.pin(tmp_path / "missing.pt") is None
    assert any("FileNotFoundError" in w for w in handle.warnings)


def test_pin_hashes_a_large_checkpoint_through_the_digest_cache(
    elsewhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the hook hashed, ``expdna which`` on the unchanged file answers from its stat."""
    from expdna.digest import SMALL_FILE_BYTES
    from expdna.store.checkpoints import FileDigests

    monkeypatch.setenv("EXPDNA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("expdna.digest.cache.RACY_WINDOW_NS", 0)  # not wait it out
    checkpoint = tmp_path / "big.pt"
    checkpoint.write_bytes(os.urandom(SMALL_FILE_BYTES + 1))
    handle = start(_args(), output_dir=None, caller_file=elsewhere)
    assert handle is not None
    real = blake3(checkpoint.read_bytes()).hexdigest()
    assert handle.pin(checkpoint) == "blake3:" + real
    conn = sqlite3.connect(tmp_path / "cache" / "digests.sqlite")
    assert conn.execute("SELECT hex FROM digests").fetchall() == [(real,)]
    conn.execute("UPDATE digests SET hex = ?", ("0" * 64,))  # poisoned: seen if read
    conn.commit()
    conn.close()
    with FileDigests() as digests:
        assert digests.digest(checkpoint)[0] == "0" * 64


def test_an_inert_handle_does_nothing() -> None:
    handle = RunHandle(manifest=None)
    assert handle.add_runtime() is handle and handle.finish({"x": 1}) is handle
    assert handle.dna is None and handle.run_id is None and handle.warnings == []


# --- the real store ----------------------------------------------------------------------


def test_add_runtime_records_the_run_in_a_real_store(elsewhere: Path, tmp_path: Path) -> None:
    from expdna.store import Store

    handle = start(
        _args(), output_dir=tmp_path / "out", store=tmp_path / "store", caller_file=elsewhere
    )
    assert handle is not None
    handle.add_runtime()
    assert handle.warnings == []
    with Store.open(tmp_path / "store") as store:
        record = store.get(handle.run_id or "")
        assert record.dna == handle.dna
        assert store.load(record.run_id).config.resolved_args["lr"] == 0.1
    handle.finish(metrics={"val_loss": 0.5, "status": "converged"})
    assert handle.path is not None
    assert load_manifest(handle.path).metrics == {"val_loss": 0.5, "status": "converged"}
    assert handle.warnings == []
    with Store.open(tmp_path / "store") as store:  # metrics added; the identity unchanged
        assert store.metrics(handle.run_id or "") == {"val_loss": 0.5}
        assert store.get(handle.run_id or "").dna == handle.dna
        assert [r.run_id for r in store.find(parse_where("metrics.status=converged"))] == [
            handle.run_id
        ]


def test_a_run_first_recorded_at_finish_carries_its_metrics(
    elsewhere: Path, tmp_path: Path
) -> None:
    from expdna.store import Store

    handle = start(_args(), output_dir=None, store=tmp_path / "store", caller_file=elsewhere)
    assert handle is not None
    handle.finish(metrics={"val_loss": 0.5})
    assert handle.warnings == []
    with Store.open(tmp_path / "store") as store:
        assert store.load(handle.run_id or "").metrics == {"val_loss": 0.5}


def test_pin_goes_to_a_real_store_when_it_takes_pins(elsewhere: Path, tmp_path: Path) -> None:
    from expdna.store import Store

    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"weights")
    handle = start(
        _args(), output_dir=tmp_path / "out", store=tmp_path / "store", caller_file=elsewhere
    )
    assert handle is not None
    handle.add_runtime()
    assert handle.pin(checkpoint, name="best") == "blake3:" + blake3(b"weights").hexdigest()
    assert handle.warnings == []
    handle.finish()
    with Store.open(tmp_path / "store") as store:
        [by_name] = store.which("best")
        [by_content] = store.which(str(checkpoint))
    assert by_name.run_id == by_content.run_id == handle.run_id
    assert by_name.dna == handle.dna and by_name.size == len(b"weights")
    assert by_name.matches is True and by_content.matches is True


# --- lineage= ----------------------------------------------------------------------------

PARENT = "20260805_101500_host_a1b2"
OTHER = "20260806_090000_host_c3d4"


def test_lineage_is_written_to_the_manifest_outside_the_dna(
    elsewhere: Path, tmp_path: Path
) -> None:
    from expdna.store import Store

    plain_run = start(_args(), output_dir=None, caller_file=elsewhere)
    handle = start(
        _args(),
        output_dir=tmp_path / "out",
        caller_file=elsewhere,
        lineage={"resumed_from": PARENT},
    )
    assert plain_run is not None and handle is not None and handle.manifest is not None
    handle.add_runtime()
    assert handle.warnings == [] and handle.path is not None
    assert json.loads(handle.path.read_text())["lineage"] == [
        {"relation": "resumed_from", "parent": PARENT}
    ]
    written = load_manifest(handle.path)
    assert handle.dna == compute_dna(written).value
    assert plain_run.manifest is not None  # the same setup without lineage: the same sections
    before = compute_dna(plain_run.manifest).sections
    assert compute_dna(written).sections == before and "lineage" not in before

    with Store.open(tmp_path / "store") as store:
        store.record(written)
        report = store.lineage(written.run_id)
    assert [(e.relation, e.parent, e.child, e.source) for e in report.ancestors] == [
        ("resumed_from", PARENT, written.run_id, "manifest")
    ]


def test_lineage_pairs_keep_two_parents_and_bad_edges_are_dropped_with_warnings(
    elsewhere: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from expdna.manifest.model import Lineage
    from expdna.store import Store

    caplog.set_level(logging.WARNING)
    handle = start(
        _args(),
        output_dir=None,
        store=tmp_path / "store",
        caller_file=elsewhere,
        lineage=[
            ("derived_from", PARENT),
            Lineage(relation="derived_from", parent=OTHER),
            ("derived_from", PARENT),  # said twice, recorded once
            ("cloned_from", PARENT),  # not a relation the store knows
            ("rerun_of", "../../etc/passwd"),  # not a run id
            ("rerun_of", 42),
            ("rerun_of",),
            "resumed_from",
        ],
    )
    assert handle is not None and handle.manifest is not None
    assert [(e.relation, e.parent) for e in handle.manifest.lineage or []] == [
        ("derived_from", PARENT),
        ("derived_from", OTHER),
    ]
    dropped = [w for w in handle.warnings if w.startswith("lineage")]
    assert len(dropped) == 5
    assert any(
        "'cloned_from' is not one of resumed_from, rerun_of, derived_from" in w for w in dropped
    )
    assert any("'../../etc/passwd' is not a run id" in w for w in dropped)
    assert sum("not a (relation, run id) pair" in w for w in dropped) == 2
    assert {f"expdna: {w}" for w in dropped} <= set(_warnings(caplog))

    handle.finish()  # the hook records the run itself: the store took the kept edges
    assert not any("record" in w for w in handle.warnings)
    with Store.open(tmp_path / "store") as store:
        report = store.lineage(handle.run_id or "")
    assert sorted((e.relation, e.parent) for e in report.ancestors) == [
        ("derived_from", PARENT),
        ("derived_from", OTHER),
    ]


@pytest.mark.parametrize("bad", [42, "resumed_from", {"resumed_from": None}, {"parent": PARENT}])
def test_unusable_lineage_is_a_warning_and_the_manifest_is_kept(elsewhere: Path, bad: Any) -> None:
    handle = start(_args(), output_dir=None, caller_file=elsewhere, lineage=bad)
    assert handle is not None and handle.manifest is not None
    assert handle.manifest.lineage is None
    assert "lineage" not in handle.manifest.to_dict()
    assert any(w.startswith("lineage") for w in handle.warnings)


def test_a_lineage_naming_the_run_itself_is_dropped(elsewhere: Path) -> None:
    from expdna.integrations.hook import _add_lineage

    # The run id is made by start(), so a caller can only name it by mistake afterwards.
    handle = start(_args(), output_dir=None, caller_file=elsewhere)
    assert handle is not None and handle.manifest is not None
    notes: list[str] = []
    _add_lineage(handle.manifest, {"rerun_of": handle.manifest.run_id}, notes)
    assert handle.manifest.lineage is None
    assert notes == [
        f"lineage names the run itself as its parent; edge 'rerun_of' -> {handle.run_id!r} dropped"
    ]


def test_track_forwards_lineage(elsewhere: Path, tmp_path: Path) -> None:
    with track(
        _args(), output_dir=tmp_path / "out", caller_file=elsewhere, lineage={"rerun_of": PARENT}
    ) as run:
        pass
    assert run.path is not None
    assert load_manifest(run.path).lineage is not None
    assert json.loads(run.path.read_text())["lineage"] == [
        {"relation": "rerun_of", "parent": PARENT}
    ]


def test_an_unknown_section_is_logged_and_strict_makes_it_a_warning_to_act_on(
    elsewhere: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(ctx: CollectContext) -> dict[str, Any]:
        raise OSError("NVML: Unknown Error")

    def registry() -> Any:
        found = default_registry(plugins=False)
        found.add(Collector("broken", "hardware", broken))
        return found

    caplog.set_level(logging.WARNING, logger="expdna")
    handle = start(_args(), output_dir=tmp_path, registry=registry(), caller_file=elsewhere)
    assert handle is not None and handle.manifest is not None
    assert handle.manifest.unknown == {
        "hardware": "collector broken failed: OSError: NVML: Unknown Error"
    }
    assert any("section hardware is unknown" in line for line in _warnings(caplog))

    with pytest.warns(expdna.IncompleteManifestWarning, match="section hardware is unknown"):
        start(_args(), output_dir=tmp_path, registry=registry(), caller_file=elsewhere, strict=True)
    # A caller that made the warning an error gets it, as Python's warnings promise.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", expdna.IncompleteManifestWarning)
        with pytest.raises(expdna.IncompleteManifestWarning):
            start(_args(), registry=registry(), caller_file=elsewhere, strict=True)


def _search(elsewhere: Path, tmp_path: Path, configs: list[dict[str, Any]]) -> list[Any]:
    """A hyperparameter search in one process: the same argv and code for every trial,
    each trial's settings handed to the hook in code, a real loop trained in each."""
    manifests = []
    for i, config in enumerate(configs):
        out = tmp_path / f"trial{i}"
        settings = {**config, "output_dir": str(out)}
        with expdna.track(settings, output_dir=out, caller_file=elsewhere) as run:
            weight = 0.0
            for _ in range(50):  # fit y = 2x by gradient descent at this trial's lr
                weight -= config["lr"] * 2 * (weight - 2.0)
            run.log_final(loss=(weight - 2.0) ** 2)
        assert run.path is not None
        manifests.append(load_manifest(run.path))
    return manifests


def test_trials_of_a_search_in_one_process_get_one_dna_per_setting(
    elsewhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["search.py", "--trials", "3"])
    a, b, c = _search(elsewhere, tmp_path, [{"lr": 0.01}, {"lr": 0.1}, {"lr": 0.1}])
    assert a.dna is not None and b.dna is not None and c.dna is not None
    assert a.dna.value != b.dna.value  # two settings, two setups
    assert b.dna.value == c.dna.value  # the same settings, one setup (output dirs differ)
    assert a.config.model_dump().get("settings_source") == "code"
    for manifest in (a, b, c):
        assert compute_dna(manifest) == manifest.dna  # the written file verifies


def test_settings_from_an_argv_parser_keep_the_argv_rule(
    elsewhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses
    import types

    monkeypatch.setattr(sys, "argv", ["train.py"])

    @dataclasses.dataclass
    class Args:
        lr: float = 0.1

    def source(args: Any, **kwargs: Any) -> Any:
        handle = start(args, output_dir=None, caller_file=elsewhere, **kwargs)
        assert handle is not None and handle.manifest is not None
        return handle.manifest.config.settings_source

    assert source(_args()) is None
    assert source(Args()) is None
    assert source({"lr": 0.1}) == "code"
    assert source(types.SimpleNamespace(lr=0.1)) == "code"
    # The caller knows best: a dataclass built in a loop, a dict parsed from argv.
    assert source(Args(), settings_source="code") == "code"
    assert source({"lr": 0.1}, settings_source="argv") is None
    # argv parsed by the hook itself is argv.
    assert source(None) is None


def test_a_bad_settings_source_is_a_warning_and_the_type_decides(
    elsewhere: Path, caplog: pytest.LogCaptureFixture
) -> None:
    handle = start({"lr": 0.1}, output_dir=None, caller_file=elsewhere, settings_source="cli")
    assert handle is not None and handle.manifest is not None
    assert handle.manifest.config.settings_source == "code"
    assert any("settings_source='cli'" in w for w in _warnings(caplog))


def test_an_empty_store_costs_the_store_not_the_manifest(
    elsewhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    handle = start(_args(), output_dir=tmp_path / "out", store="", caller_file=elsewhere)
    assert handle is not None and handle.path is not None and handle.path.exists()
    assert not handle.store.configured
    assert any(
        "'' is an empty path" in w and "not recording in a store" in w for w in handle.warnings
    )
    assert not (tmp_path / "index.sqlite").exists() and not (tmp_path / "objects").exists()
    handle.finish()
    # a blank $EXPDNA_STORE is unset, as a shell's `EXPDNA_STORE=` is
    monkeypatch.setenv("EXPDNA_STORE", "  ")
    blank = start(_args(), output_dir=tmp_path / "out2", caller_file=elsewhere)
    assert blank is not None and not blank.store.configured and blank.path is not None
    blank.finish()
