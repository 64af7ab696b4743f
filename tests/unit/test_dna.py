"""DNA properties: what changes it, what does not."""

from __future__ import annotations

import copy
from typing import Any

from expdna.manifest.dna import compute_dna, short
from expdna.manifest.io import manifest_from_dict

COMMIT = "1c8e2fb98b7af3e1e86263ccd1f375e4d833b217"


def doc(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schema_version": "1.0",
        "run_id": "20260805_143025_1c8e2fb_k3f9",
        "generated_at": "2026-08-05T14:30:25Z",
        "command": {"argv": ["python", "train.py", "--lr", "0.1"], "cwd": "/work"},
        "code": {"proj": {"commit": COMMIT, "branch": "main", "dirty": False}},
        "config": {
            "resolved_args": {"lr": 0.1, "seed": 1, "output_dir": "/out/a"},
            "selected_env": {"NCCL_DEBUG": "INFO", "CUDA_VISIBLE_DEVICES": "0"},
        },
        "environment": {"python_version": "3.11.7", "packages": {"torch": "2.13.0"}},
        "hardware": {"gpus": [{"name": "NVIDIA H200", "uuid": "GPU-1"}], "cpu_count": 2},
    }
    base.update(overrides)
    return base


def dna(d: dict[str, Any], version: int | None = None) -> Any:
    if version is None:
        return compute_dna(manifest_from_dict(d))
    return compute_dna(manifest_from_dict(d), version=version)


def changed_sections(a: dict[str, Any], b: dict[str, Any], version: int | None = None) -> set[str]:
    da, db = dna(a, version), dna(b, version)
    return {name for name in da.sections if da.sections[name] != db.sections[name]}


def test_dna_is_64_hex_shown_as_12() -> None:
    value = dna(doc()).value
    assert len(value) == 64 and int(value, 16) >= 0
    assert short(value) == value[:12]


def test_document_identity_does_not_enter() -> None:
    other = doc(
        run_id="20990101_000000_nogit_zzzz",
        generated_at="2099-01-01T00:00:00Z",
        command={**doc()["command"], "cwd": "/elsewhere"},
        metrics={"loss": 1.0},
    )
    assert dna(doc()).value == dna(other).value


def test_an_edited_argv_is_another_dna_in_version_3() -> None:
    edited = doc(command={**doc()["command"], "argv": ["python", "train.py", "--lr", "9"]})
    assert changed_sections(doc(), edited) == {"config"}
    assert dna(doc(), version=2).value == dna(edited, version=2).value  # as version 2 was


def test_one_resolved_arg_changes_only_config_before_version_3() -> None:
    b = doc()
    b["config"] = copy.deepcopy(b["config"])
    b["config"]["resolved_args"]["lr"] = 0.2
    assert changed_sections(doc(), b, version=2) == {"config"}
    # Version 3: the argument counts as the command's word; a default only the process
    # knew (recorded by a hook, not by generate) does not.
    assert changed_sections(doc(), b) == set()
    b["config"]["resolved_args"]["batch_size"] = 16
    assert changed_sections(doc(), b) == set()


def _from_code(source: Any = "code", **args: Any) -> dict[str, Any]:
    d = doc()
    d["config"] = {**d["config"], "resolved_args": {**d["config"]["resolved_args"], **args}}
    if source is not None:
        d["config"]["settings_source"] = source
    return d


def test_settings_handed_over_in_code_count_in_version_3() -> None:
    # A search loop's dict: argv and code are the same, the settings are not.
    assert changed_sections(_from_code(lr=0.01), _from_code(lr=0.1)) == {"config"}
    assert dna(_from_code(lr=0.1)).value == dna(_from_code(lr=0.1)).value
    # Values only the process knew count too: nothing else holds them.
    assert changed_sections(_from_code(), _from_code(batch_size=16)) == {"config"}
    # Per-run values stay out, by version 3's rules (output_dir, report_to).
    same = _from_code(output_dir="/out/b", report_to="wandb")
    assert dna(_from_code()).value == dna(same).value
    assert (
        dna(_from_code()).value == dna(_from_code(output_dir="/out/b", ckpt_path="/out/b/x")).value
    )


def test_the_settings_marker_is_inside_the_dna() -> None:
    argv = dna(_from_code(None)).value
    # Absent, null and "argv" are the argv rule: the resolved args stay out.
    assert dna(_from_code("argv")).value == argv
    assert dna(_from_code(None, lr=9.0)).value == argv
    assert dna(_from_code("argv", lr=9.0)).value == argv
    # Dropping or editing the marker changes the DNA; any other value counts the settings.
    assert dna(_from_code()).value != argv
    assert dna(_from_code("other")).value not in (argv, dna(_from_code()).value)
    assert dna(_from_code("other", lr=9.0)).value != dna(_from_code("other")).value
    # Versions 1 and 2 ignore the marker: old DNAs verify as before.
    for version in (1, 2):
        assert dna(_from_code(), version).value == dna(_from_code(None), version).value


def test_version_3_leaves_the_training_section_out() -> None:
    a = doc(training={"micro_batch_size": 16, "global_batch_size": 32})
    b = doc(training={"micro_batch_size": 16})
    assert changed_sections(a, b, version=2) == {"training"}
    assert changed_sections(a, b) == set()


def test_new_commit_changes_only_code() -> None:
    b = doc(code={"proj": {"commit": "f" * 40, "branch": "main", "dirty": False}})
    assert changed_sections(doc(), b) == {"code"}


def test_key_and_insertion_order_do_not_matter() -> None:
    a = doc()
    reordered = {k: a[k] for k in reversed(list(a))}
    reordered["config"] = {
        "selected_env": dict(reversed(list(a["config"]["selected_env"].items()))),
        "resolved_args": dict(reversed(list(a["config"]["resolved_args"].items()))),
    }
    assert dna(a).value == dna(reordered).value


def test_per_run_and_per_device_values_stay_out() -> None:
    b = copy.deepcopy(doc())
    b["config"]["resolved_args"]["output_dir"] = "/out/b"
    b["config"]["selected_env"]["CUDA_VISIBLE_DEVICES"] = "3"
    b["hardware"]["gpus"][0]["uuid"] = "GPU-2"
    b["code"]["proj"]["branch"] = "feature"
    assert dna(doc()).value == dna(b).value


def test_paths_under_the_output_root_stay_out_but_other_paths_count() -> None:
    # The resolved-argument rules of versions 1 and 2 (version 3 applies them to argv).
    a = copy.deepcopy(doc())
    a["config"]["resolved_args"]["tb_dir"] = "/out/a/tb"
    a["config"]["resolved_args"]["data_dir"] = "/data/x"
    b = copy.deepcopy(a)
    b["config"]["resolved_args"]["output_dir"] = "/out/b"
    b["config"]["resolved_args"]["tb_dir"] = "/out/b/tb"
    assert dna(a, 2).value == dna(b, 2).value
    b["config"]["resolved_args"]["data_dir"] = "/data/y"
    assert dna(a, 2).value != dna(b, 2).value


def test_seed_stays_in_unless_ignored() -> None:
    # The resolved-argument rules of versions 1 and 2 (version 3 applies them to argv).
    b = copy.deepcopy(doc())
    b["config"]["resolved_args"]["seed"] = 2
    assert changed_sections(doc(), b, version=2) == {"config"}
    a = copy.deepcopy(doc())
    a["config"]["dna_ignore"] = ["config.resolved_args.seed"]
    b["config"]["dna_ignore"] = ["config.resolved_args.seed"]
    assert dna(a, 2).value == dna(b, 2).value


def test_inline_patch_text_does_not_enter_only_its_digest() -> None:
    patch = {"digest": "blake3:" + "1" * 64, "size": 10, "text": "diff --git a b\n"}
    a = doc(code={"proj": {"commit": COMMIT, "dirty": True, "patch": patch}})
    b = doc(
        code={
            "proj": {
                "commit": COMMIT,
                "dirty": True,
                "patch": {**patch, "text": None, "truncated": True},
            }
        }
    )
    assert dna(a).value == dna(b).value
    c = doc(
        code={
            "proj": {
                "commit": COMMIT,
                "dirty": True,
                "patch": {**patch, "digest": "blake3:" + "2" * 64},
            }
        }
    )
    assert changed_sections(a, c) == {"code"}


def test_null_and_absent_are_the_same_fact() -> None:
    a = doc(environment={"python_version": "3.11.7", "glibc": None})
    b = doc(environment={"python_version": "3.11.7"})
    assert dna(a).value == dna(b).value


def test_kernel_patch_level_stays_out() -> None:
    a = doc(environment={"kernel": "6.1.0-18-amd64"})
    b = doc(environment={"kernel": "6.1.0-21-amd64"})
    c = doc(environment={"kernel": "6.8.0-1-amd64"})
    assert dna(a).value == dna(b).value != dna(c).value


def test_repository_checkout_names_do_not_matter() -> None:
    a = doc(code={"proj": {"commit": COMMIT}})
    b = doc(code={"proj-copy": {"commit": COMMIT}})
    assert dna(a).value == dna(b).value


def test_broad_output_roots_do_not_swallow_path_arguments() -> None:
    # The resolved-argument rules of versions 1 and 2 (version 3 applies them to argv).
    for root in (".", "./", "/"):
        a = copy.deepcopy(doc())
        a["config"]["resolved_args"]["output_dir"] = root
        a["config"]["resolved_args"]["train_file"] = "./data/train.json"
        a["config"]["resolved_args"]["data_path"] = "/data/a"
        b = copy.deepcopy(a)
        b["config"]["resolved_args"]["train_file"] = "./data/other.json"
        b["config"]["resolved_args"]["data_path"] = "/data/b"
        assert changed_sections(a, b, version=2) == {"config"}, root


def test_masked_secrets_stay_out_but_other_redactions_count() -> None:
    # The resolved-argument rules of versions 1 and 2 (version 3 applies them to argv).
    a = copy.deepcopy(doc())
    b = copy.deepcopy(doc())
    b["config"]["selected_env"]["HF_TOKEN"] = "hf_***"
    b["config"]["resolved_args"]["api_key"] = "***"
    assert dna(a, 2).value == dna(b, 2).value
    b["config"]["resolved_args"]["data_dir"] = "<HOME>/data"
    assert changed_sections(a, b, version=2) == {"config"}


def test_probe_sources_and_container_stay_out() -> None:
    a = doc(
        hardware={"gpu_source": "nvml", "cuda_version_source": "torch", "gpu_count": 0},
        environment={"python_version": "3.11.7", "container": "docker"},
    )
    b = doc(
        hardware={"gpu_source": "nvidia-smi-xml", "cuda_version_source": "driver", "gpu_count": 0},
        environment={"python_version": "3.11.7", "container": None},
    )
    assert dna(a).value == dna(b).value


def test_the_written_file_recomputes_to_the_same_dna_with_odd_numbers(tmp_path: Any) -> None:
    from expdna.manifest.io import load_manifest, write_manifest

    d = copy.deepcopy(doc())
    d["config"]["resolved_args"]["output_dir"] = 2**60  # written as a string
    d["config"]["resolved_args"]["log_path"] = str(2**60) + "/tb"
    d["config"]["resolved_args"]["max_norm"] = float("inf")
    manifest = manifest_from_dict(d)
    manifest.dna = compute_dna(manifest)
    back = load_manifest(write_manifest(manifest, tmp_path / "m.json"))
    assert compute_dna(back).value == manifest.dna.value


def test_loaded_framework_keeps_only_its_determinism_switches_before_version_3() -> None:
    def env(seed: int, digest: str, deterministic: bool) -> dict[str, Any]:
        return {
            "python_version": "3.11.7",
            "framework": {
                "torch": {
                    "version": "2.13.0",
                    "build": {"cuda": None},
                    "loaded": {
                        "version": "2.13.0",
                        "config_digest": digest,
                        "determinism": {
                            "initial_seed": seed,
                            "deterministic_algorithms": deterministic,
                        },
                    },
                }
            },
        }

    a = doc(environment=env(1, "blake3:" + "a" * 64, True))
    b = doc(environment=env(2, "blake3:" + "b" * 64, True))
    c = doc(environment=env(1, "blake3:" + "a" * 64, False))
    assert dna(a, 2).value == dna(b, 2).value
    assert changed_sections(a, c, version=2) == {"environment"}
    # Version 3: the switches only the process can read leave the DNA (generate has none).
    assert changed_sections(a, c) == set()
    assert (
        dna(a).value
        == dna(
            doc(
                environment={
                    "python_version": "3.11.7",
                    "framework": {"torch": {"version": "2.13.0", "build": {"cuda": None}}},
                }
            )
        ).value
    )


def test_version_3_leaves_hash_randomization_out() -> None:
    a = doc(environment={"python_version": "3.11.7", "hash_randomization": True})
    b = doc(environment={"python_version": "3.11.7", "hash_randomization": False})
    assert changed_sections(a, b, version=2) == {"environment"}
    assert changed_sections(a, b) == set()


def test_power_limit_stays_out() -> None:
    a = doc(hardware={"gpus": [{"name": "H200", "power_limit_w": 700.0}]})
    b = doc(hardware={"gpus": [{"name": "H200", "power_limit_w": 500.0}]})
    assert dna(a).value == dna(b).value


def test_dataset_detail_beyond_its_digest_stays_out() -> None:
    digest = "blake3:" + "d" * 64
    a = doc(data={"datasets": [{"root": "/data/a", "digest": digest, "files": 1, "bytes": 3}]})
    b = doc(
        data={
            "datasets": [
                {
                    "root": "/mnt/b",
                    "digest": digest,
                    "files": 1,
                    "bytes": 3,
                    "listing": [["x", 3, digest]],
                    "tables": [{"path": "x", "rows": 1}],
                }
            ]
        }
    )
    c = doc(
        data={
            "datasets": [
                {"root": "/data/a", "digest": "blake3:" + "e" * 64, "files": 1, "bytes": 3}
            ]
        }
    )
    assert dna(a).value == dna(b).value
    assert changed_sections(a, c) == {"data"}


def test_ignoring_a_seed_argument_also_ignores_the_training_seed_derived_from_it() -> None:
    import expdna
    from expdna.manifest.family import family_of, with_derived_seed_ignores

    assert with_derived_seed_ignores(["config.resolved_args.seed", "config.resolved_args.lr"]) == [
        "config.resolved_args.seed",
        "config.resolved_args.lr",
        "training.seeds.seed",
    ]
    assert with_derived_seed_ignores(["config.resolved_args.*"]) == ["config.resolved_args.*"]
    # Collected for real: the seed lands in config.resolved_args and training.seeds.
    runs = [
        expdna.collect(
            ["python", "train.py", "--lr", "0.1", "--seed", seed],
            collectors=["command", "config", "training"],
            dna_ignore=["config.resolved_args.seed"],
        )
        for seed in ("1", "2")
    ]
    assert runs[0].training.seeds == {"seed": 1}
    assert runs[0].dna is not None and runs[1].dna is not None
    assert runs[0].dna.value == runs[1].dna.value
    # Without the ignore the DNAs differ, but the runs are one family.
    plain = [
        expdna.collect(
            ["python", "train.py", "--lr", "0.1", "--seed", seed],
            collectors=["command", "config", "training"],
        )
        for seed in ("1", "2")
    ]
    assert plain[0].dna != plain[1].dna
    assert family_of(plain[0]) == family_of(plain[1])
