"""The check rules, one status flip at a time, over two hand-built manifests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from expdna.compare.check import (
    ABSENT,
    CLEAN,
    DIRTY_NO_PATCH,
    NO_GPU,
    CheckReport,
    Finding,
    RuleSet,
    Status,
    check_manifest,
    default_rules,
)
from expdna.manifest.dna import compute_dna
from expdna.manifest.model import Manifest

COMMIT_A = "1c8e2fb" + "0" * 33
COMMIT_B = "9d8e7f6" + "1" * 33
PATCH_A = "blake3:" + "a" * 64
PATCH_B = "blake3:" + "b" * 64


def make(**sections: Any) -> Manifest:
    """A manifest as expdna writes it: its DNA computed from its content."""
    manifest = Manifest.model_validate(
        {
            "schema_version": "1.0",
            "run_id": "20260805_143025_1c8e2fb_k3f9",
            "generated_at": "2026-08-05T14:30:25Z",
            **sections,
        }
    )
    manifest.dna = compute_dna(manifest)
    return manifest


def statuses(recorded: Manifest, current: Manifest) -> dict[str, str]:
    return {r.field: r.status for r in check_manifest(recorded, current).results}


def one(recorded: Manifest, current: Manifest, field: str) -> tuple[str, Any, Any]:
    found = [r for r in check_manifest(recorded, current).results if r.field == field]
    assert len(found) == 1, found
    return found[0].status, found[0].recorded, found[0].current


def repo(commit: str | None = COMMIT_A, patch: str | None = None, **extra: Any) -> dict[str, Any]:
    state: dict[str, Any] = {"commit": commit, "dirty": patch is not None, **extra}
    if patch is not None:
        state["patch"] = {"digest": patch, "size": 10}
    return state


# --- code ---------------------------------------------------------------------------


def test_commit_equal_passes_and_differing_fails() -> None:
    recorded = make(code={"relax": repo(COMMIT_A)})
    assert one(recorded, make(code={"relax": repo(COMMIT_A)}), "code.relax.commit")[0] == "PASS"
    assert one(recorded, make(code={"relax": repo(COMMIT_B)}), "code.relax.commit") == (
        "FAIL",
        COMMIT_A,
        COMMIT_B,
    )


def test_recorded_repo_missing_now_fails_as_absent_and_skips_its_patch() -> None:
    recorded = make(code={"relax": repo(), "megatron": repo(COMMIT_B)})
    current = make(code={"relax": repo()})
    assert one(recorded, current, "code.megatron.commit") == ("FAIL", COMMIT_B, ABSENT)
    assert "code.megatron.patch.digest" not in statuses(recorded, current)


def test_repo_missing_because_git_failed_is_unknown_not_absent() -> None:
    recorded = make(code={"relax": repo()})
    current = make(collection={"collectors": {"git": {"status": "timeout"}}})
    assert one(recorded, current, "code.relax.commit") == ("WARN", COMMIT_A, None)


@pytest.mark.parametrize(
    ("old", "new", "status"),
    [
        (None, None, "PASS"),
        (PATCH_A, PATCH_A, "PASS"),
        (None, PATCH_A, "FAIL"),
        (PATCH_A, None, "FAIL"),
        (PATCH_A, PATCH_B, "FAIL"),
    ],
)
def test_patch_digest(old: str | None, new: str | None, status: str) -> None:
    recorded = make(code={"relax": repo(patch=old)})
    current = make(code={"relax": repo(patch=new)})
    assert one(recorded, current, "code.relax.patch.digest") == (
        status,
        old or CLEAN,
        new or CLEAN,
    )


@pytest.mark.parametrize(
    ("old", "new", "status"),
    [
        (DIRTY_NO_PATCH, DIRTY_NO_PATCH, "WARN"),
        (DIRTY_NO_PATCH, PATCH_A, "WARN"),
        (PATCH_A, DIRTY_NO_PATCH, "WARN"),
        (DIRTY_NO_PATCH, CLEAN, "FAIL"),
        (CLEAN, DIRTY_NO_PATCH, "FAIL"),
    ],
)
def test_dirty_tree_without_a_patch(old: str, new: str, status: str) -> None:
    def state(value: str) -> dict[str, Any]:
        if value == DIRTY_NO_PATCH:
            return {"commit": COMMIT_A, "dirty": True}
        return repo(patch=None if value == CLEAN else value)

    recorded, current = make(code={"relax": state(old)}), make(code={"relax": state(new)})
    assert one(recorded, current, "code.relax.patch.digest") == (status, old, new)


def test_patch_state_unknown_when_recorded_without_dirty_flag() -> None:
    recorded = make(code={"relax": {"commit": COMMIT_A}})
    assert "code.relax.patch.digest" not in statuses(recorded, make(code={"relax": repo()}))


# --- versions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("new", "status"),
    [("3.11.7", "PASS"), ("3.11.9", "PASS"), ("3.12.1", "WARN"), ("4.0", "FAIL")],
)
def test_python_version(new: str, status: str) -> None:
    recorded = make(environment={"python_version": "3.11.7"})
    current = make(environment={"python_version": new})
    assert one(recorded, current, "environment.python_version") == (status, "3.11.7", new)


def test_python_unknown_now_warns() -> None:
    recorded = make(environment={"python_version": "3.11.7"})
    assert one(recorded, make(), "environment.python_version") == ("WARN", "3.11.7", None)


@pytest.mark.parametrize(
    ("new", "status"), [("12.4", "PASS"), ("12.4.1", "PASS"), ("12.1", "WARN"), ("11.8", "FAIL")]
)
def test_cuda_version(new: str, status: str) -> None:
    recorded = make(hardware={"cuda_version": "12.4"})
    assert one(recorded, make(hardware={"cuda_version": new}), "hardware.cuda_version")[0] == status


@pytest.mark.parametrize(
    ("new", "status"),
    [
        ("2.13.0", "PASS"),
        ("2.13.1", "WARN"),
        ("2.14.0+cu124", "WARN"),
        ("3.0", "FAIL"),
        ("1.13.1", "FAIL"),
    ],
)
def test_torch_major(new: str, status: str) -> None:
    recorded = make(environment={"packages": {"torch": "2.13.0"}})
    current = make(environment={"packages": {"torch": new}})
    assert one(recorded, current, "environment.packages.torch") == (status, "2.13.0", new)


def test_torch_missing_now_fails() -> None:
    recorded = make(environment={"packages": {"torch": "2.13.0"}})
    assert one(recorded, make(), "environment.packages.torch") == ("FAIL", "2.13.0", ABSENT)


def test_package_drift_warns_per_package() -> None:
    recorded = make(
        environment={"packages": {"numpy": "1.26.4", "ray": "2.9.0", "triton": "2.1.0"}}
    )
    current = make(environment={"packages": {"numpy": "1.26.4", "ray": "2.10.0"}})
    assert statuses(recorded, current) == {
        "environment.packages.numpy": "PASS",
        "environment.packages.ray": "WARN",
        "environment.packages.triton": "WARN",
    }
    assert one(recorded, current, "environment.packages.triton")[2] == ABSENT


def test_packages_unknown_when_environment_collector_failed() -> None:
    recorded = make(environment={"packages": {"numpy": "1.26.4"}})
    current = make(collection={"collectors": {"environment": {"status": "failed"}}})
    assert one(recorded, current, "environment.packages.numpy") == ("WARN", "1.26.4", None)


# --- hardware -----------------------------------------------------------------------


def test_gpu_model() -> None:
    recorded = make(hardware={"gpu_model": "NVIDIA H100 80GB HBM3"})
    same = make(hardware={"gpu_model": "NVIDIA H100 80GB HBM3"})
    other = make(hardware={"gpu_model": "NVIDIA A100-SXM4-80GB"})
    assert one(recorded, same, "hardware.gpu_model")[0] == "PASS"
    assert one(recorded, other, "hardware.gpu_model")[0] == "FAIL"
    assert one(recorded, make(), "hardware.gpu_model") == ("WARN", "NVIDIA H100 80GB HBM3", None)
    no_gpu = make(hardware={"gpu_count": 0})
    assert one(recorded, no_gpu, "hardware.gpu_model") == ("FAIL", "NVIDIA H100 80GB HBM3", NO_GPU)


@pytest.mark.parametrize(
    ("field", "old", "new"),
    [
        ("driver_version", "550.54.15", "550.90.07"),
        ("nccl_version", "2.23.4", "2.21.5"),
        ("cudnn_version", "9.1.0", "8.9.7"),
    ],
)
def test_driver_nccl_cudnn_differ_warn(field: str, old: str, new: str) -> None:
    recorded = make(hardware={field: old})
    assert one(recorded, make(hardware={field: old}), f"hardware.{field}")[0] == "PASS"
    assert one(recorded, make(hardware={field: new}), f"hardware.{field}") == ("WARN", old, new)


def test_vbios_per_gpu_by_index() -> None:
    recorded = make(
        hardware={
            "gpus": [{"vbios_version": "96.00.89.00.01"}, {"vbios_version": "96.00.89.00.01"}]
        }
    )
    current = make(
        hardware={
            "gpus": [{"vbios_version": "96.00.89.00.01"}, {"vbios_version": "96.00.74.00.0B"}]
        }
    )
    assert statuses(recorded, current) == {
        "hardware.gpus.0.vbios_version": "PASS",
        "hardware.gpus.1.vbios_version": "WARN",
    }
    assert one(recorded, make(), "hardware.gpus.1.vbios_version")[2] is None


# --- the engine ---------------------------------------------------------------------


def test_fields_unrecorded_on_both_sides_are_not_printed() -> None:
    recorded = make(environment={"python_version": "3.11.7"})
    report = check_manifest(recorded, make(environment={"python_version": "3.11.7"}))
    # python was recorded; torch, GPU, driver and the rest were not, so have no line
    assert [r.field for r in report.results] == ["environment.python_version"]
    assert report.verdict == "PASS"


def test_value_present_now_but_not_recorded_is_not_checked() -> None:
    current = make(hardware={"gpu_model": "NVIDIA H100 80GB HBM3", "driver_version": "550"})
    assert [r.field for r in check_manifest(make(), current).results] == ["sections"]


def test_verdict_counts_and_json_shape() -> None:
    recorded = make(
        code={"relax": repo()},
        environment={"python_version": "3.11.7", "packages": {"numpy": "1.26.4"}},
        hardware={"gpu_model": "H100"},
    )
    current = make(
        code={"relax": repo(COMMIT_B)},
        environment={"python_version": "3.11.7", "packages": {"numpy": "2.0.0"}},
        hardware={"gpu_model": "A100"},
    )
    report = check_manifest(recorded, current)
    assert report.verdict == "FAIL"
    assert report.counts() == {"FAIL": 2, "WARN": 1, "PASS": 2}
    assert [r.field for r in report.failures()] == ["code.relax.commit", "hardware.gpu_model"]
    doc = report.to_dict()
    assert doc["verdict"] == "FAIL"
    assert set(doc["results"][0]) == {"rule", "field", "status", "recorded", "current", "note"}
    assert doc["results"][0]["rule"] == "commit"


def test_verdict_warn_without_fail() -> None:
    recorded = make(hardware={"driver_version": "550.54.15"})
    report = check_manifest(recorded, make(hardware={"driver_version": "550.90.07"}))
    assert report.verdict == "WARN"
    assert CheckReport(()).verdict == "PASS"


def test_results_follow_the_registry_order() -> None:
    recorded = make(
        code={"relax": repo()},
        environment={"python_version": "3.11.7", "packages": {"torch": "2.3.0"}},
        hardware={"gpu_model": "H100", "cuda_version": "12.4"},
    )
    rules = [r.rule for r in check_manifest(recorded, recorded).results]
    order = list(default_rules().rules)
    assert rules == sorted(rules, key=order.index)


def test_custom_rule_set_replaces_the_defaults() -> None:
    rules = RuleSet()

    @rules.register("seed")
    def _seed(recorded: Manifest, current: Manifest) -> list[Finding]:
        old, new = recorded.training.seeds.get("global"), current.training.seeds.get("global")
        status: Status = "PASS" if old == new else "FAIL"
        return [Finding("training.seeds.global", status, str(old), str(new))]

    recorded = make(code={"relax": repo()}, training={"seeds": {"global": 1}})
    report = check_manifest(recorded, make(training={"seeds": {"global": 2}}), rules=rules)
    assert [(r.rule, r.status) for r in report.results] == [("seed", "FAIL")]
    with pytest.raises(ValueError, match="twice"):
        rules.add("seed", _seed)


def _mini(code: dict[str, Any], gpus: list[dict[str, Any]] | None = None) -> Manifest:
    return Manifest.model_validate(
        {
            "schema_version": "1.0",
            "run_id": "r",
            "generated_at": "2026-12-01T00:00:00Z",
            "code": code,
            "hardware": {"gpus": gpus or [], "gpu_count": len(gpus or [])},
        }
    )


def _status(report: Any, field: str) -> str:
    return next(r.status for r in report.results if r.field == field)


def test_a_clone_under_another_directory_name_is_the_same_repository() -> None:
    sha = "a" * 40
    recorded = _mini({"proj": {"commit": sha, "dirty": False}})
    assert (
        _status(
            check_manifest(recorded, _mini({"proj-2": {"commit": sha, "dirty": False}})),
            "code.proj.commit",
        )
        == "PASS"
    )
    two = _mini(
        {
            "x": {"commit": sha, "remote": "https://h/a.git"},
            "y": {"commit": "b" * 40, "remote": "https://h/b.git"},
        }
    )
    live = _mini(
        {
            "x2": {"commit": "b" * 40, "remote": "https://h/b.git"},
            "y2": {"commit": sha, "remote": "https://h/a.git"},
        }
    )
    report = check_manifest(two, live)
    assert _status(report, "code.x.commit") == "PASS"
    assert _status(report, "code.y.commit") == "PASS"


def test_compute_capability_fails_and_vbios_case_does_not_matter() -> None:
    recorded = _mini(
        {}, [{"name": "A", "vbios_version": "90.04.7A.40.73", "compute_capability": "9.0"}]
    )
    live = _mini(
        {}, [{"name": "A", "vbios_version": "90.04.7a.40.73", "compute_capability": "8.0"}]
    )
    report = check_manifest(recorded, live)
    assert _status(report, "hardware.gpus.0.vbios_version") == "PASS"
    assert _status(report, "hardware.gpus.0.compute_capability") == "FAIL"


# --- the document itself ------------------------------------------------------------


def test_a_manifest_edited_after_it_was_written_fails() -> None:
    recorded = make(code={"relax": repo(COMMIT_A)})
    edited = recorded.model_copy(deep=True)
    edited.code["relax"].commit = COMMIT_B  # the DNA block still names COMMIT_A's setup
    current = make(code={"relax": repo(COMMIT_B)})
    report = check_manifest(edited, current)
    [dna] = [r for r in report.results if r.field == "dna"]
    assert (dna.status, dna.recorded, dna.note) == (
        "FAIL",
        recorded.dna.value if recorded.dna else None,
        "edited after it was written",
    )
    assert dna.current == compute_dna(edited).value
    assert report.verdict == "FAIL"
    # Unedited, the same manifest has no dna finding at all.
    assert "dna" not in statuses(recorded, make(code={"relax": repo(COMMIT_A)}))


def test_a_manifest_without_a_dna_block_warns() -> None:
    recorded = make(code={"relax": repo()})
    recorded.dna = None
    assert one(recorded, make(code={"relax": repo()}), "dna")[0] == "WARN"


def test_a_manifest_with_nothing_collected_is_not_a_pass() -> None:
    report = check_manifest(make(), make(code={"relax": repo()}))
    assert report.verdict == "WARN"
    [finding] = report.results
    assert finding.field == "sections"
    assert finding.note is not None and "nothing recorded" in finding.note


def test_every_file_of_an_unversioned_tree_is_checked_not_only_the_entry(tmp_path: Path) -> None:
    # A scratch folder outside git: train.py imports helper.py; editing helper.py or adding
    # a module changes the code the entry runs.
    from expdna.collectors.unversioned import unversioned_tree
    from expdna.collectors.worktree import FileHasher
    from expdna.compare.entry import entry_findings

    folder = tmp_path / "scratch"
    folder.mkdir()
    (folder / "train.py").write_text("import helper\n")
    (folder / "helper.py").write_text("x = 1\n")
    recorded = make(
        command={"argv": ["python", "train.py"], "cwd": str(folder)},
        code={"scratch": unversioned_tree(folder, FileHasher(use_cache=False))},
    )

    def entry() -> list[tuple[str, str]]:
        found = entry_findings(recorded, make(), folder, {})
        return [(f.status, f.note or "") for f in found]

    assert entry() == [("PASS", "in unversioned tree scratch")]
    (folder / "helper.py").write_text("x = 2\n")
    (folder / "newmod.py").write_text("y = 1\n")
    assert entry() == [
        ("FAIL", "changed since it was recorded in unversioned tree scratch: "
         "helper.py (changed), newmod.py (new)")
    ]  # fmt: skip
