"""Write the DNA test vectors: manifest -> projections -> section digests -> DNA.

Run only when the DNA definition changes on purpose (a new ``dna.version``) or a case is
added (existing files must then come out unchanged but for new keys):
    python tests/vectors/make_dna_vectors.py
The vectors then pin that definition; tests/unit/test_dna_vectors.py fails on any drift.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from expdna.manifest.canonical import normalise
from expdna.manifest.dna import compute_dna, projections
from expdna.manifest.family import family_of
from expdna.manifest.io import manifest_from_dict

HERE = Path(__file__).parent / "dna"
COMMIT_A = "1c8e2fb98b7af3e1e86263ccd1f375e4d833b217"
COMMIT_B = "8325919e7a2f4c3d1b5e8f9a0c2d3e4f5a6b7c8d"
PATCH = "blake3:" + "ab" * 32

BASE: dict[str, Any] = {
    "schema_version": "1.0",
    "run_id": "20260805_143025_1c8e2fb_k3f9",
    "generated_at": "2026-08-05T14:30:25Z",
}

CASES: dict[str, dict[str, Any]] = {
    "minimal": {**BASE},
    "typical": {
        **BASE,
        "command": {"argv": ["python", "train.py", "--lr", "0.0003"], "cwd": "<HOME>/relax"},
        "code": {
            "relax": {
                "commit": COMMIT_A,
                "branch": "main",
                "dirty": True,
                "remote": "https://github.com/example/relax.git",
                "patch": {"digest": PATCH, "size": 1234, "text": "diff --git a/x b/x\n"},
            },
            "megatron": {"commit": COMMIT_B, "branch": None, "detached": True, "dirty": False},
        },
        "config": {
            "resolved_args": {
                "lr": 0.0003,
                "global_batch_size": 16,
                "seed": 1234,
                "output_dir": "/ckpt/run7",
                "tensorboard_dir": "/ckpt/run7/tb",
                "data_path": "/data/imagenet",
                "run_name": "grpo-7",
                "wandb_project": "relax",
            },
            "selected_env": {
                "CUDA_VISIBLE_DEVICES": "0,1",
                "NCCL_DEBUG": "INFO",
                "SLURM_JOB_ID": "4242",
                "SLURM_NNODES": "2",
            },
        },
        "training": {
            "algorithm": "grpo",
            "parallel_topology": {"tensor": 2, "pipeline": 1},
            "global_batch_size": 16,
            "seeds": {"seed": 1234},
        },
        "environment": {
            "python_version": "3.12.3",
            "python_implementation": "CPython",
            "packages": {"torch": "2.11.0+cu129", "ray": "2.56.0"},
            "kernel": "6.1.0-18-amd64",
            "os": "Debian GNU/Linux 12 (bookworm)",
            "glibc": "2.36",
            "python_executable": "/opt/venv/bin/python",
        },
        "hardware": {
            "gpus": [
                {
                    "name": "NVIDIA H100 80GB HBM3",
                    "memory_gb": 79.6,
                    "vbios_version": "96.00.89.00.01",
                    "uuid": "GPU-5c1b2b7e-aaaa",
                    "pci_bus_id": "00000000:19:00.0",
                    "pcie_gen_current": 1,
                    "pcie_gen_max": 5,
                }
            ],
            "gpu_model": "NVIDIA H100 80GB HBM3",
            "gpu_count": 1,
            "driver_version": "550.54.15",
            "cuda_version": "12.4",
            "nccl_version": "2.23.4",
            "cpu_model": "Intel(R) Xeon(R) Platinum 8480+",
            "memory_gb": 2015.5,
        },
        "runtime": {
            "mode": "multi_node_ray",
            "node_count": 2,
            "nodes": [
                {
                    "role": "worker",
                    "node_id": "bbbb",
                    "address": "10.0.0.2",
                    "resources": {"CPU": 96.0, "GPU": 8.0, "node:10.0.0.2": 1.0, "memory": 1.5e12},
                },
                {
                    "role": "head",
                    "node_id": "aaaa",
                    "address": "10.0.0.1",
                    "resources": {"CPU": 96.0, "GPU": 8.0, "node:__internal_head__": 1.0},
                },
            ],
        },
        "data": {
            "datasets": [
                {"root": "/data/imagenet", "digest": PATCH, "files": 3, "bytes": 99},
            ]
        },
        "metrics": {"val_loss": 0.25},
    },
    "per_run_rules": {
        **BASE,
        "config": {
            "resolved_args": {
                "output_dir": ".",
                "train_file": "./data/train.json",
                "save_dir": "/ckpt/r1",
                "eval_path": "/ckpt/r1/eval",
                "api_key": "***",
                "store": "/srv/expdna",
                "lr": 2.0,
            },
            "selected_env": {"HF_TOKEN": "hf_***", "NCCL_ALGO": "Ring", "MASTER_PORT": "29500"},
        },
        "environment": {
            "python_version": "3.11.7",
            "container": "docker",
            "framework": {
                "torch": {
                    "version": "2.13.0",
                    "build": {"cuda": "12.4"},
                    "loaded": {
                        "config_digest": PATCH,
                        "determinism": {
                            "initial_seed": 99,
                            "deterministic_algorithms": True,
                        },
                    },
                }
            },
        },
        "hardware": {
            "gpu_source": "nvidia-smi-csv",
            "cuda_version_source": "torch",
            "gpus": [
                {
                    "name": "NVIDIA H200",
                    "power_limit_w": 700.0,
                    "compute_capability": "9.0",
                    "pcie_gen_max": 5,
                    "pcie_gen_current": 1,
                }
            ],
        },
        "data": {
            "datasets": [
                {
                    "root": "/data/x",
                    "digest": PATCH,
                    "files": 1,
                    "bytes": 5,
                    "listing": [["a.txt", 5, PATCH]],
                    "tables": [{"path": "a.parquet", "rows": 3}],
                }
            ]
        },
    },
    "dna_ignore_and_special_numbers": {
        **BASE,
        "config": {
            "resolved_args": {
                "seed": 2**63 - 1,
                "lr": 1e-7,
                "warmup": 0.0,
                "max_norm": float("inf"),
            },
            "dna_ignore": ["config.resolved_args.seed"],
        },
        "training": {"seeds": {"seed": 7}},
    },
    # Schema 1.1: sections a collector could not finish. The code section is unknown and
    # empty (git timed out), which must not equal a run that had no git at all; hardware is
    # unknown with what was collected before the failure.
    "unknown_sections": {
        **BASE,
        "schema_version": "1.1",
        "unknown": {
            "code": "collector git timeout: no answer within 4 s; abandoned",
            "hardware": "collector gpu failed: NVMLError: Unknown Error",
        },
        "hardware": {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8},
        "environment": {"python_version": "3.11.7"},
    },
    # The family digest leaves out every seed: resolved seed arguments (``seed``,
    # ``random_seed``, ``*_seed`` in any spelling) and ``training.seeds``.
    "seeds": {
        **BASE,
        "config": {
            "resolved_args": {
                "lr": 0.001,
                "Seed": 3,
                "data-seed": 11,
                "shuffle_seed": 5,
                "seeds": "not-a-seed-name",
            },
        },
        "training": {"seeds": {"seed": 3, "data_seed": 11, "shuffle_seed": 5}, "algorithm": "sft"},
    },
    # Config files: their digests count, their paths and the arguments naming them do not
    # (config_file_args, normalised); details, parsed values and Hydra overrides are outside.
    "config_files": {
        **BASE,
        "schema_version": "1.1",
        "config": {
            "resolved_args": {
                "Config-File": "../shared/exp.yaml",
                "deepspeed": "ds.json",
                "batch_size": 12,
                "config_name": "not-listed-so-kept",
            },
            "config_files": {
                "/work/shared/exp.yaml": "blake3:" + "cd" * 32,
                "/work/proj/ds.json": "blake3:" + "0e" * 32,
                "/work/proj/config/train_gpt2.py": "blake3:" + "ab" * 32,
            },
            "config_file_args": ["config_file", "DeepSpeed"],
            "config_file_details": {
                "/work/shared/exp.yaml": {
                    "name": "exp.yaml",
                    "source": "--config-file",
                    "format": "yaml",
                    "size": 31,
                    "digest": "blake3:" + "cd" * 32,
                    "text": "optimizer:\n  lr: 0.0003\n",
                }
            },
            "config_values": {"exp.yaml": {"optimizer": {"lr": 0.0003}}},
            "hydra": {"overrides": ["db=postgres"]},
        },
        "training": {"global_batch_size": 12},
    },
}


def main() -> None:
    HERE.mkdir(parents=True, exist_ok=True)
    for name, doc in CASES.items():
        manifest = manifest_from_dict(doc)
        dna = compute_dna(manifest)
        vector = {
            "manifest": normalise(manifest.to_dict()),
            "projections": normalise(projections(manifest)),
            "sections": dna.sections,
            "dna": dna.value,
            "dna_version": dna.version,
            "family": family_of(manifest),
        }
        text = json.dumps(vector, indent=2, ensure_ascii=False, allow_nan=False)
        (HERE / f"{name}.json").write_text(text + "\n", encoding="utf-8")
        print(f"{name}: {dna.value}")


if __name__ == "__main__":
    main()
