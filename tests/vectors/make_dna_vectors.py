"""Write the DNA test vectors: manifest -> projections -> section digests -> DNA, family.

Run only when the DNA definition changes on purpose (a new ``dna.version``) or a case is
added (existing files must then come out unchanged but for new keys):
    python tests/vectors/make_dna_vectors.py
The vectors then pin that definition: tests/unit/test_dna_vectors.py (expdna) and
spec/js/test/vectors.test.mjs (the JavaScript implementation) fail on any drift.

Each case is the document as an implementation reads it (sparse documents stay sparse,
legacy names stay legacy, large integers stay integers), a sentence saying which rule of
docs/en/guide.md ("Recomputing the DNA") it pins, and the DNA version it is computed in.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from expdna.manifest.canonical import normalise
from expdna.manifest.dna import DNA_VERSION, compute_dna, projections
from expdna.manifest.family import family_of
from expdna.manifest.io import manifest_from_dict

HERE = Path(__file__).parent / "dna"
COMMIT_A = "1c8e2fb98b7af3e1e86263ccd1f375e4d833b217"
COMMIT_B = "8325919e7a2f4c3d1b5e8f9a0c2d3e4f5a6b7c8d"
PATCH = "blake3:" + "ab" * 32
OTHER = "blake3:" + "cd" * 32

BASE: dict[str, Any] = {
    "schema_version": "1.0",
    "run_id": "20260805_143025_1c8e2fb_k3f9",
    "generated_at": "2026-08-05T14:30:25Z",
}
BASE_11 = {**BASE, "schema_version": "1.1"}

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
    # -- one case per rule and per question an implementer must not have to guess ------
    "sparse_defaults": {
        **BASE_11,
        "code": {"only": {"commit": COMMIT_A}},
        "training": {"algorithm": "ppo"},
        "environment": {"python_version": "3.12.3"},
        "hardware": {"gpu_count": 0},
        "runtime": {"mode": "local", "nodes": [{"role": "head"}, {}]},
        "data": {"datasets": [{"root": "/data", "digest": PATCH}]},
    },
    "code_repositories": {
        **BASE_11,
        "code": {
            "zeta": {
                "commit": COMMIT_B,
                "dirty": True,
                "patch": {
                    "digest": PATCH,
                    "size": 10,
                    "binary_files": [
                        {"path": "w.bin", "digest": OTHER, "size": 3},
                        {"path": "a.bin", "size": 7},
                        {"path": "a.bin", "digest": PATCH},
                    ],
                },
                "submodules": [
                    {"path": "vendor/z", "commit": COMMIT_A, "checked_out": COMMIT_B},
                    {"path": "vendor/a", "commit": COMMIT_A, "state": "clean"},
                ],
            },
            "alpha": {"commit": COMMIT_A, "dirty": False, "branch": "main", "submodules": []},
        },
    },
    "string_order": {
        **BASE_11,
        "code": {
            "r": {
                "commit": COMMIT_A,
                "dirty": True,
                "patch": {
                    "digest": PATCH,
                    "size": 1,
                    "binary_files": [
                        {"path": "\U0001f600.bin", "digest": PATCH},
                        {"path": "\uff5e.bin", "digest": PATCH},
                        {"path": "z.bin", "digest": PATCH},
                    ],
                },
                "submodules": [
                    {"path": "\U0001f600", "commit": COMMIT_A},
                    {"path": "\uff5e", "commit": COMMIT_B},
                ],
            }
        },
        "config": {
            "resolved_args": {"\U0001f600": 1, "\uff5e": 2, "z": 3, "\u00e9": 4},
        },
    },
    "config_names": {
        **BASE_11,
        "config": {
            "resolved_args": {
                "Output-Dir": "/runs/a",
                "OUTPUT_ROOT": "/runs",
                "wandb-project": "p",
                "my_checkpoint_dir": "/c",
                "chec\u212apoint_dir": "/kelvin",
                "output_d\u0130r": "/dotted-i",
                "tags": ["x"],
                "lr": 0.1,
                "store": "/srv/expdna",
                "expdna_note": "n",
            },
        },
    },
    "config_output_roots": {
        **BASE_11,
        "config": {
            "resolved_args": {
                "output_dir": "/ckpt/run7/",
                "log_dir": ".",
                "run_id": 12345678901234567890,
                "tensorboard_path": "/ckpt/run7/tb",
                "data_path": "/data/imagenet",
                "eval_file": "/ckpt/run7",
                "resume_prefix": "/ckpt/run7x",
                "cache_dir": "12345678901234567890/cache",
                "dir": "/ckpt/run7/d",
                "data_dir\n": "/ckpt/run7/n",
                "pathology": "/ckpt/run7/p",
                "model_path": ["/ckpt/run7/m"],
            },
        },
    },
    "config_masked_and_env": {
        **BASE_11,
        "config": {
            "resolved_args": {
                "api_key": "abcd***",
                "password": "***",
                "tokens": ["hf_***", "hf_***"],
                "auth": {"token": "ghp_***"},
                "lr": 0.1,
            },
            "selected_env": {
                "HF_TOKEN": "hf_***",
                "NCCL_DEBUG": "INFO",
                "CUDA_VISIBLE_DEVICES": "0,1",
                "MASTER_ADDR": "<internal-address>",
                "MASTER_PORT": "29500",
                "SLURM_JOB_ID": "42",
                "SLURM_NNODES": "2",
                "SLURM_JOB_NODELIST": "n[1-2]",
                "slurm_job_id": "lower-case names are not per-allocation",
            },
        },
    },
    "config_files": {
        **BASE_11,
        "config": {
            "resolved_args": {"config": "conf/train.yaml"},
            "config_files": {
                "conf/train.yaml": OTHER,
                "conf/model.yaml": PATCH,
                "/elsewhere/copy.yaml": PATCH,
            },
        },
    },
    "config_file_args": {
        **BASE_11,
        "config": {
            "resolved_args": {
                "Config-File": "../shared/exp.yaml",
                "deepspeed": "ds.json",
                "batch_size": 12,
                "config_name": "not-listed-so-kept",
            },
            "config_files": {
                "/work/shared/exp.yaml": OTHER,
                "/work/proj/ds.json": "blake3:" + "0e" * 32,
                "/work/proj/config/train_gpt2.py": PATCH,
            },
            "config_file_args": ["config_file", "DeepSpeed"],
            "config_file_details": {
                "/work/shared/exp.yaml": {
                    "name": "exp.yaml",
                    "source": "--config-file",
                    "format": "yaml",
                    "size": 31,
                    "digest": OTHER,
                    "text": "optimizer:\n  lr: 0.0003\n",
                }
            },
            "config_values": {"exp.yaml": {"optimizer": {"lr": 0.0003}}},
            "hydra": {"overrides": ["db=postgres"]},
        },
        "training": {"global_batch_size": 12},
    },
    "environment_kernel_and_framework": {
        **BASE_11,
        "environment": {
            "kernel": "10.15.3-arch1",
            "hostname": "gpu-07",
            "python_executable": "/opt/venv/bin/python",
            "container": "docker",
            "packages": {"torch": "2.13.0"},
            "framework": {
                "torch": {
                    "version": "2.13.0",
                    "determinism": {"stale": True},
                    "loaded": {
                        "version": "2.13.0",
                        "determinism": {"initial_seed": 7, "deterministic_algorithms": True},
                    },
                },
                "jax": {"version": "0.4.30", "loaded": {"determinism": None}},
                "tf": "2.16.1",
            },
        },
    },
    "environment_kernel_unparsed": {
        **BASE_11,
        "environment": {"kernel": "v6.1-custom"},
    },
    "hardware_volatile_keys": {
        **BASE_11,
        "hardware": {
            "memory_gb": 2015.5,
            "gpu_count": 2,
            "cpu_count": 96,
            "gpus": [
                {
                    "name": "NVIDIA H200",
                    "memory_gb": 140.4,
                    "uuid": "GPU-1",
                    "index": 1,
                    "serial": "s",
                    "pci": {"bus_id": "00:19"},
                    "temperature_c": 40,
                    "gpu_temperature": 40,
                    "fan_speed": 30,
                    "power_draw_w": 100.5,
                    "power_limit_w": 700.0,
                    "utilization_gpu": 3,
                    "memory_used_mib": 5,
                    "memory_free_mib": 6,
                    "clocks_sm": 1980,
                    "pcie_gen_current": 1,
                    "current_clock": 1,
                    "name_source": "nvml",
                    "source": "nvml",
                    "mig": {"mode": "disabled", "uuid": "MIG-1", "instances": [{"uuid": "x"}]},
                },
                {"name": "NVIDIA H200", "memory_gb": 140.4, "minor_number": 0},
            ],
            "nics": [{"name": "mlx5_0", "hostname": "h", "rate_gbps": 400}],
        },
    },
    "runtime_nodes": {
        **BASE_11,
        "runtime": {
            "mode": "multi_node_ray",
            "node_count": 3,
            "nodes": [
                {
                    "role": "worker",
                    "node_id": "b",
                    "fingerprint": OTHER,
                    "resources": {
                        "CPU": 96,
                        "GPU": 8,
                        "memory": 1e12,
                        "object_store_memory": 2e11,
                        "node:10.0.0.2": 1,
                        "accelerator_type:H200": 1,
                    },
                },
                {"role": "worker", "fingerprint": OTHER, "resources": {"CPU": 96, "GPU": 8}},
                {"role": "head", "fingerprint": PATCH, "resources": {"node:__internal_head__": 1}},
            ],
        },
    },
    "data_datasets": {
        **BASE_11,
        "data": {
            "note": "not used",
            "datasets": [
                {
                    "root": "/mnt/b",
                    "digest": OTHER,
                    "files": 2,
                    "bytes": 10,
                    "listing": [["x", 5, PATCH]],
                    "tables": [{"path": "x.parquet", "rows": 1}],
                    "table_groups": [],
                    "format": "parquet",
                },
                {"root": "/mnt/a", "digest": PATCH, "files": 1, "bytes": 5},
            ],
        },
    },
    "dna_ignore_globs": {
        **BASE_11,
        "config": {
            "resolved_args": {
                "seed": 1,
                "model.lr": 0.1,
                "model": {"lr": 0.2, "depth": 12},
                "lr_a": 1,
                "lr_b": 2,
                "lr_c": 3,
                "x[": 4,
            },
            "dna_ignore": [
                "config.resolved_args.model.lr",
                "config.resolved_args.lr_[!a]",
                "config.resolved_args.x[",
                "hardware",
                "code.*",
                "hardware.gpus.name",
                "environment.packages.*",
                "training.[s-t]eeds",
                "runtime.node?count",
            ],
        },
        "code": {"r": {"commit": COMMIT_A}},
        "training": {"seeds": {"seed": 1}, "algorithm": "sft"},
        "environment": {"packages": {"torch": "2.13.0"}, "python_version": "3.11.7"},
        "hardware": {"gpus": [{"name": "NVIDIA H200"}], "gpu_count": 1},
        "runtime": {"mode": "local", "node_count": 1},
    },
    "legacy_names": {
        **BASE,
        "args": {"lr": 0.1, "seed": 1},
        "config": {
            "args": {"lr": 0.2},
            "env": {"NCCL_DEBUG": "WARN"},
            "selected_env": {"NCCL_DEBUG": "INFO"},
        },
        "env": {"NCCL_ALGO": "Ring"},
        "git": {"repo": {"commit": COMMIT_A, "dirty": False}},
        "cli_args": ["python", "train.py"],
    },
    "nulls_and_numbers": {
        **BASE_11,
        "config": {
            "resolved_args": {
                "none": None,
                "list": [None, 1, None],
                "nested": {"a": None, "b": 1.0},
                "big": 2**64,
                "negative_big": -(2**53),
                "safe": 2**53 - 1,
                "tiny": 1e-7,
                "huge": 1e21,
                "zero": -0.0,
                "float_big": 1e17,
            },
        },
        "training": {"global_batch_size": 1e17, "micro_batch_size": 4.0},
        "hardware": {"gpus": [{"name": "g", "memory_gb": 2**60}]},
        "runtime": {"nodes": [{"resources": {"GPU": 2**53 + 1}}]},
        "data": {"datasets": [{"root": "/d", "files": 2**60, "bytes": None}]},
    },
    "unknown_with_dna_ignore": {
        **BASE_11,
        "unknown": {"environment": "collector environment timeout", "data": "failed"},
        "environment": {"python_version": "3.11.7", "packages": {"torch": "2.13.0"}},
        "config": {"dna_ignore": ["environment.packages", "data.datasets"]},
    },
    "family_seed_names": {
        **BASE_11,
        "config": {
            "resolved_args": {
                "SEED": 1,
                "__seed": 2,
                "Data-Seed": 3,
                "seeds": 4,
                "seed_": 5,
                "seedling": 6,
                "random_seed": 7,
                "\uff33\uff25\uff25\uff24": 8,
            },
        },
        "training": {"seeds": {"seed": 1, "data_seed": 3}},
    },
    # -- version 1, still computed for manifests that carry it ---------------------------
    "v1_python_rules": {
        **BASE,
        "config": {
            "resolved_args": {
                "output_dir": "/ckpt/r",
                "chec\u212apoint_dir": "/kelvin",
                "data_dir\n": "/ckpt/r/n",
                "\u212a_seed": 3,
            },
        },
        "environment": {"kernel": "\uff16.\uff11.0-custom"},
    },
    # -- version 3: the command, per-run and debug settings, seeds in argv and files ----------
    "v3_command_launcher": {
        **BASE_11,
        "command": {
            "argv": [
                "torchrun",
                "--standalone",
                "--nproc_per_node=2",
                "--rdzv-endpoint",
                "10.0.0.1:29500",
                "--master_port",
                "29501",
                "./src/train.py",
                "--lr=0.1",
                "--batch_size",
                "64",
            ],
            "cwd": "<HOME>/proj",
            "entry": "src/train.py",
        },
    },
    "v3_command_ray_worker": {
        **BASE_11,
        "command": {
            "argv": [
                "/opt/venv/lib/python3.11/site-packages/ray/_private/workers/default_worker.py",
                "--node-ip-address=10.0.0.7",
                "--node-manager-port=33301",
                "--session-name=session_2026-12-05_18-31-34_445289_12504",
                "--worker-id=7d651035bc77d9cb59a4c27af007b778f864fe026f04bc7fee7fa55e",
                "--startup-token=4",
            ],
            "cwd": "/work",
        },
        "config": {"resolved_args": {"lr": 0.01}, "settings_source": "code"},
    },
    "v3_command_interpreter": {
        **BASE_11,
        "command": {
            "argv": ["/usr/bin/python3.11", "-u", "-O", "-X", "dev", "-m", "pkg.train", "x=1"],
            "cwd": "/work",
        },
    },
    "v3_command_masks": {
        **BASE_11,
        "command": {
            "argv": [
                "python",
                "train.py",
                "config/exp.py",
                "--output_dir",
                "/ckpt/run7",
                "--run-name=grpo-7",
                "--config",
                "exp.yaml",
                "--api-key",
                "sk-***",
                "--report_to",
                "wandb",
                "--dropout",
                "0.1",
                "hydra.run.dir=/tmp/x",
                "paths.output_dir=/tmp/y",
                "model.lr=0.001",
                "+trainer=gpu",
                "~callbacks",
                "--lr",
                "3e-4",
            ],
            "entry": "elsewhere.py",
        },
        "config": {
            "config_file_args": ["config"],
            "dna_ignore": ["config.resolved_args.dropout"],
        },
    },
    "v3_code_unversioned": {
        **BASE_11,
        "code": {
            "scripts": {
                "unversioned": True,
                "tree": {"digest": PATCH, "files": [["train.py", OTHER]]},
            },
        },
    },
    "v3_per_run_settings": {
        **BASE_11,
        # The same arguments as words of the command, where version 3 masks them.
        "command": {
            "argv": [
                "python",
                "train.py",
                "--report_to",
                "wandb",
                "--logging_steps",
                "10",
                "--logging-strategy=steps",
                "--log_level",
                "info",
                "--disable_tqdm",
                "--push_to_hub",
                "False",
                "--hub_model_id",
                "me/model",
                "--save_steps",
                "500",
                "--save_total_limit",
                "2",
                "--log_interval",
                "1",
                "--master_port",
                "29500",
                "--local_rank=0",
                "--node_rank",
                "1",
                "--learning_rate",
                "5e-5",
                "--logging",
                "3",
                "--saved_model_format",
                "x",
            ],
        },
        "config": {
            "resolved_args": {
                "report_to": ["wandb"],
                "logging_steps": 10,
                "logging_strategy": "steps",
                "log_level": "info",
                "disable_tqdm": True,
                "push_to_hub": False,
                "hub_model_id": "me/model",
                "save_steps": 500,
                "save_total_limit": 2,
                "log_interval": 1,
                "master_port": 29500,
                "local_rank": 0,
                "node_rank": 1,
                "learning_rate": 5e-5,
                "logging": 3,
                "saved_model_format": "x",
            },
            "selected_env": {
                "NCCL_DEBUG": "INFO",
                "NCCL_DEBUG_SUBSYS": "ALL",
                "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
                "TORCH_CPP_LOG_LEVEL": "INFO",
                "CUDA_LAUNCH_BLOCKING": "1",
                "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
                "HF_HOME": "/cache/hf",
                "HF_HUB_CACHE": "/cache/hub",
                "TORCHINDUCTOR_CACHE_DIR": "/cache/inductor",
                "TRANSFORMERS_VERBOSITY": "info",
                "NCCL_IB_DISABLE": "1",
                "CUDA_HOME": "/usr/local/cuda",
                "OMP_NUM_THREADS": "8",
                "MKL_NUM_THREADS": "8",
            },
        },
    },
    "v3_family_seeds": {
        **BASE_11,
        "command": {
            "argv": [
                "python",
                "src/train.py",
                "seed=42",
                "--data-seed=7",
                "--seed",
                "1",
                "--lr",
                "0.1",
                "model.init_seed=3",
            ],
        },
        "config": {
            "resolved_args": {"seed": 1, "lr": 0.1},
            "config_files": {"<HOME>/proj/exp.yaml": OTHER, "<HOME>/proj/model.yaml": PATCH},
            "config_file_details": {
                "<HOME>/proj/exp.yaml": {"digest": OTHER, "seedless_digest": "blake3:" + "ef" * 32},
            },
        },
    },
    # What a hook inside torchrun records and generate before it cannot: argparse defaults
    # (batch_size), the training fields derived from them, the process's determinism facts.
    "v3_arguments_in_the_command": {
        **BASE_11,
        "command": {
            "argv": [
                "torchrun",
                "--standalone",
                "--nproc-per-node",
                "2",
                "train.py",
                "--lr",
                "0.2",
            ],
            "entry": "train.py",
        },
        "config": {
            "resolved_args": {"lr": 0.2, "batch_size": 16, "output_dir": "runs/a"},
            "selected_env": {"OMP_NUM_THREADS": "1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"},
        },
        "training": {
            "micro_batch_size": 16,
            "global_batch_size": 32,
            "parallel_topology": {"data": 2},
            "seeds": {"seed": 0},
        },
    },
    # A trial of a search in one process: expdna.track({"lr": 0.01, ...}) with the same argv
    # and code as every other trial. The settings were handed over in code: they count
    # (per-run values masked as in version 2's resolved_args), with the marker.
    "v3_settings_from_code": {
        **BASE_11,
        "command": {"argv": ["python", "search.py", "--trials", "8"], "entry": "search.py"},
        "config": {
            "resolved_args": {
                "lr": 0.01,
                "batch_size": 16,
                "output_dir": "runs/trial3",
                "ckpt_path": "runs/trial3/last.pt",
                "report_to": "wandb",
                "hf_token": "hf_***",
                "data_path": "/data/train",
            },
            "selected_env": {"OMP_NUM_THREADS": "1"},
            "settings_source": "code",
        },
    },
    "v3_process_facts": {
        **BASE_11,
        "environment": {
            "python_version": "3.11.7",
            "hash_randomization": True,
            "framework": {
                "torch": {
                    "version": "2.13.0+cpu",
                    "build": {"cuda": None},
                    "loaded": {
                        "version": "2.13.0+cpu",
                        "determinism": {
                            "deterministic_algorithms": False,
                            "cudnn_benchmark": False,
                            "matmul_allow_tf32": True,
                            "float32_matmul_precision": "high",
                            "sdp_flash": True,
                            "num_threads": 1,
                            "initial_seed": 1234,
                        },
                    },
                }
            },
        },
    },
}

ABOUT: dict[str, str] = {
    "minimal": "An empty document: the containers every projection always has.",
    "typical": "A two-node Ray run: every section, per-run values left out.",
    "per_run_rules": "Broad output roots, masked secrets, framework, sources, data detail.",
    "dna_ignore_and_special_numbers": "dna_ignore on a seed; large integers, inf, 1e-7, 0.0.",
    "unknown_sections": "Schema 1.1 unknown sections: the marker wraps what was collected.",
    "seeds": "The family digest leaves out seed arguments and training.seeds.",
    "sparse_defaults": "Step 1 defaults: missing containers, a node without resources.",
    "code_repositories": "Repository names ignored, binary_files as [path, digest] without "
    "size, submodules by path, empty lists left out.",
    "string_order": "Sorting is by UTF-8 bytes (code points); JCS keys by UTF-16 units.",
    "config_names": "Per-run names after ASCII lower-casing and '-' to '_': the Kelvin sign "
    "and the dotted I are not letters A-Z.",
    "config_output_roots": "Output roots: trailing '/', broad roots, numbers written as "
    "strings, path-like names, a name ending in a newline.",
    "config_masked_and_env": "Only a string ending in *** is masked; per-allocation "
    "environment names are case-sensitive.",
    "config_files": "config_files becomes the sorted list of its digests.",
    "config_file_args": "Arguments named in config_file_args (normalised) leave resolved_args; "
    "config_file_details, config_values and hydra are not projected.",
    "environment_kernel_and_framework": "Kernel major.minor; framework entries without "
    "loaded, plus loaded determinism without initial_seed.",
    "environment_kernel_unparsed": "A kernel that does not start with digits stays whole.",
    "hardware_volatile_keys": "Volatile hardware keys at every depth, in lists too; host "
    "memory_gb only at the top.",
    "runtime_nodes": "Node role, resources without volatile ones, fingerprint; nodes sorted.",
    "data_datasets": "Datasets without root, listing, tables, table_groups; sorted.",
    "dna_ignore_globs": "dna_ignore: members only, dotted keys unescaped, [!...] and ranges, "
    "no walk into lists, a section name alone removes nothing.",
    "legacy_names": "Legacy names: the current name wins, then the first in the table.",
    "nulls_and_numbers": "Nulls dropped from objects only; integers beyond 2^53-1 become "
    "strings, except in float-typed fields; whole floats in integer fields are integers.",
    "unknown_with_dna_ignore": "dna_ignore applies inside an unknown section's projection.",
    "family_seed_names": "Seed names for the family digest: ASCII case, '-' as '_', leading "
    "'_' ignored.",
    "v1_python_rules": "DNA version 1: Unicode lower-casing, Unicode digits, '$' before a "
    "final newline.",
    "v1_typical": "The typical case in DNA version 1.",
    "v3_typical": "The typical case in DNA version 3: the command enters config.",
    "v3_command_launcher": "Version 3 command: launcher options dashed, --opt=value split, "
    "per-run launcher options left out, the entry relative to its repository.",
    "v3_command_ray_worker": "Version 3 command: a Ray worker (the argv of every Ray task, "
    "actor and Tune trial) is the launcher ray with no option words: its words are per-process.",
    "v3_command_interpreter": "Version 3 command: the interpreter by name, -u left out, "
    "-O and -X kept, a -m module.",
    "v3_command_masks": "Version 3 command: per-run, config-file, redacted and dna_ignore'd "
    "argument values masked; Hydra overrides by the last part of their key, hydra.* always; "
    "an entry naming another file is not used.",
    "v3_code_unversioned": "Version 3 code outside git: the tree digest enters as a commit "
    "does; its file listing does not.",
    "v3_per_run_settings": "Version 3: reporting, logging, hub, progress and save arguments "
    "and debug, log and cache variables leave the DNA.",
    "v3_family_seeds": "Version 3 family: seed options with their values and seed overrides "
    "leave argv, a config file counts by its seedless_digest.",
    "v3_arguments_in_the_command": "Version 3: resolved_args leave config (their words are in "
    "the command; defaults only the process knows are not) and training projects to {}.",
    "v3_settings_from_code": "Version 3: settings handed over in code (config.settings_source "
    "other than absent, null or argv) keep resolved_args in config, per-run values masked, "
    "and the marker with them.",
    "v3_process_facts": "Version 3: the loaded framework's determinism switches and "
    "hash_randomization leave environment (only the running process reads them).",
}

#: Cases computed in another DNA version than the current one: version 1's, and every case
#: written before version 3 (their files stay as they were, in version 2).
VERSIONS: dict[str, int] = {
    **{name: 2 for name in CASES if not name.startswith(("v1_", "v3_"))},
    "v1_python_rules": 1,
    "v1_typical": 1,
}
CASES["v1_typical"] = CASES["typical"]
CASES["v3_typical"] = CASES["typical"]


def as_json(value: Any) -> Any:
    """``value`` as a JSON file can hold it: only non-finite floats change (to their
    marker strings, which project as the floats do); large integers stay integers."""
    if isinstance(value, float) and not math.isfinite(value):
        return normalise(value)
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_json(v) for v in value]
    return value


def vector(name: str, doc: dict[str, Any]) -> dict[str, Any]:
    version = VERSIONS.get(name, DNA_VERSION)
    manifest = manifest_from_dict(doc)
    dna = compute_dna(manifest, version=version)
    return {
        "about": ABOUT[name],
        "manifest": as_json(doc),
        "projections": normalise(projections(manifest, version=version)),
        "sections": dna.sections,
        "dna": dna.value,
        "dna_version": dna.version,
        "family": family_of(manifest, version=version),
    }


def main() -> None:
    HERE.mkdir(parents=True, exist_ok=True)
    for name, doc in CASES.items():
        built = vector(name, doc)
        text = json.dumps(built, indent=2, ensure_ascii=False, allow_nan=False)
        (HERE / f"{name}.json").write_text(text + "\n", encoding="utf-8")
        print(f"{name}: {built['dna']}")


if __name__ == "__main__":
    main()
