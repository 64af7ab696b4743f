"""Check docs/tools/reference_dna.py against expdna on random manifests.

Every document is hashed three ways: by expdna, by the reference on the sparse document,
and by the reference on the file expdna would write. Any difference is printed.

    .venv/bin/python docs/tools/fuzz_reference.py [SEED] [COUNT]
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reference_dna as ref

from expdna.manifest.dna import compute_dna
from expdna.manifest.io import manifest_from_dict, serialise

R = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else 3000

ARG_NAMES = [
    "lr",
    "output_dir",
    "Output-Dir",
    "data_path",
    "eval_file",
    "save",
    "run_name",
    "wandb_project",
    "my_log_dir",
    "ckpt_prefix",
    "seed",
    "tags",
    "train_dir",
    "cache_path",
    "x_output_dir",
    "notes",
    "store",
    "index_url",
    "expdna_store",
    "db_password",
    "hf_token",
]
ARG_VALUES = [
    "/ckpt/run7",
    "/ckpt/run7/tb",
    "/ckpt/run7x",
    "/data/x",
    "runs",
    "runs/a",
    ".",
    "./",
    "/",
    "~",
    "~/",
    "..",
    "//",
    "./data",
    "",
    3,
    2.5,
    None,
    True,
    [1, 2],
    float("inf"),
    2**60,
    "9223372036854775807",
    "9223372036854775807/x",
    "日本",
    "ckpt/",
    "hf_***",
    "***",
    "abcd***",
    "<HOME>/x",
    "a***b",
]
ENV_NAMES = [
    "CUDA_VISIBLE_DEVICES",
    "NCCL_DEBUG",
    "MASTER_ADDR",
    "MASTER_PORT",
    "SLURM_JOB_ID",
    "SLURM_NNODES",
    "SLURM_STEP_ID",
    "HF_HOME",
    "HF_TOKEN",
    "RAY_ADDRESS",
    "cuda_port",
]
HARDWARE_KEYS = [
    "uuid",
    "serial",
    "pci_bus_id",
    "pci",
    "index",
    "temperature_gpu",
    "gpu_temperature",
    "fan_speed",
    "clocks_sm",
    "pcie_gen_current",
    "current_link",
    "name",
    "vbios_version",
    "memory_gb",
    "memory_used_mb",
    "hostname",
    "source",
    "Index",
    "power_draw_w",
    "compute_capability",
    "gpu_source",
    "cuda_version_source",
    "power_limit_w",
    "power_limit",
    "mig_mode",
]


def maybe(p: float = 0.5) -> bool:
    return R.random() < p


def value() -> Any:
    return R.choice(ARG_VALUES)


def framework() -> dict[str, Any]:
    torch: dict[str, Any] = {
        "version": R.choice(["2.13.0+cpu", None]),
        "build": {"cuda": R.choice([None, "12.4"])},
    }
    if maybe():
        torch["loaded"] = {
            "version": "2.13.0+cpu",
            "config_digest": "blake3:" + "e" * 64,
            **(
                {
                    "determinism": {
                        "deterministic_algorithms": R.choice([True, False, None]),
                        "initial_seed": R.randint(0, 2**63),
                        "pythonhashseed": R.choice([None, "0"]),
                    }
                }
                if maybe(0.8)
                else {"determinism": R.choice(["odd", None])}
            ),
        }
    if maybe(0.2):
        torch["determinism"] = {"old": 1}
    return {
        "torch": torch,
        **({"jax": R.choice(["0.4", None, {"version": "0.4"}])} if maybe(0.3) else {}),
    }


def document() -> dict[str, Any]:
    d: dict[str, Any] = {
        "schema_version": f"1.{R.randint(0, 3)}",
        "run_id": "r",
        "generated_at": "t",
    }
    if maybe():
        d["code"] = {
            f"r{i}": {
                "commit": R.choice(["a" * 40, "b" * 40, None]),
                "dirty": R.choice([True, False, None]),
                "branch": R.choice(["main", None]),
                **(
                    {
                        "patch": {
                            "digest": R.choice(["blake3:" + "c" * 64, "blake3:" + "d" * 64]),
                            "size": 3,
                            "binary_files": [
                                {
                                    "path": R.choice(["z", "a", "m"]),
                                    "digest": R.choice([None, "x", "y"]),
                                }
                                for _ in range(R.randint(0, 3))
                            ],
                        }
                    }
                    if maybe()
                    else {}
                ),
                "submodules": [
                    {
                        "path": R.choice(["s2", "s1"]),
                        "commit": R.choice([None, "e" * 40]),
                        "checked_out": R.choice([None, "f" * 40]),
                        "state": "clean",
                    }
                    for _ in range(R.randint(0, 2))
                ],
            }
            for i in range(R.randint(0, 3))
        }
    if maybe(0.8):
        d["config"] = {
            "resolved_args": {R.choice(ARG_NAMES): value() for _ in range(R.randint(0, 8))},
            "selected_env": {
                R.choice(ENV_NAMES): R.choice(["0", "1", "x", "hf_***", "***"])
                for _ in range(R.randint(0, 5))
            },
            "config_files": {
                R.choice(["a.yaml", "b.yaml"]): R.choice(["blake3:1", "blake3:0"])
                for _ in range(R.randint(0, 2))
            },
            "config_file_args": R.sample(ARG_NAMES, R.randint(0, 2)),
            "settings_source": R.choice([None, "argv", "code", "code", "other"]),
            "dna_ignore": R.sample(
                [
                    "config.settings_source",
                    "config.resolved_args.seed",
                    "config.*.lr",
                    "hardware.gpus",
                    "training.seeds",
                    "environment.packages.*",
                    "runtime.nodes",
                    "config.config_files",
                    "hardware.cpu_*",
                    "environment.framework.torch.determinism",
                ],
                R.randint(0, 2),
            ),
        }
    if maybe():
        d["training"] = (
            {
                "algorithm": R.choice([None, "grpo"]),
                "seeds": {"s": value()} if maybe() else {},
                "extra": value(),
            }
            if maybe()
            else {}
        )
    if maybe():
        d["environment"] = {
            "kernel": R.choice(["6.1.0-18-amd64", "5.15", "weird", None, "6"]),
            "hostname": "h",
            "python_executable": "/x",
            "container": R.choice(["docker", None]),
            "packages": {"torch": "2.1"} if maybe() else {},
            "other": value(),
            **({"framework": framework()} if maybe(0.7) else {}),
            **({"hash_randomization": R.choice([True, False, None])} if maybe(0.3) else {}),
        }
    if maybe():
        d["hardware"] = {
            "memory_gb": 3.0,
            "gpus": [
                {R.choice(HARDWARE_KEYS): R.choice(["a", 1, None]) for _ in range(4)}
                for _ in range(R.randint(0, 3))
            ],
            R.choice(HARDWARE_KEYS): {R.choice(HARDWARE_KEYS): {R.choice(HARDWARE_KEYS): 1}},
            "gpu_model": R.choice([None, "H100"]),
        }
    if maybe():
        d["runtime"] = {
            "mode": R.choice([None, "local"]),
            "node_count": R.choice([None, 2]),
            "nodes": [
                {
                    "role": R.choice(["head", "worker", None]),
                    "node_id": "x",
                    "fingerprint": R.choice([None, "fp1", "fp0"]),
                    "resources": {
                        R.choice(
                            ["CPU", "GPU", "memory", "node:1.2.3.4", "object_store_memory", "accel"]
                        ): float(R.randint(0, 3))
                        for _ in range(3)
                    },
                }
                for _ in range(R.randint(0, 4))
            ],
        }
    if maybe():
        d["data"] = {
            "datasets": [
                {
                    "root": R.choice(["/a", "/b"]),
                    "digest": R.choice([None, "blake3:1", "blake3:2"]),
                    "files": R.choice([None, 1, 2]),
                    "rows": R.choice([None, 5]),
                    **({"listing": [["a", 1, "blake3:" + "0" * 64]]} if maybe() else {}),
                    **(
                        {R.choice(["tables", "table_groups"]): [{"format": "parquet", "rows": 3}]}
                        if maybe()
                        else {}
                    ),
                }
                for _ in range(R.randint(0, 3))
            ]
        }
    return d


def main() -> int:
    bad = tried = 0
    for _ in range(COUNT):
        raw = document()
        try:
            manifest = manifest_from_dict(json.loads(json.dumps(raw)))
        except Exception:
            continue  # a document the schema refuses: nothing to compare
        tried += 1
        want = compute_dna(manifest).value
        sparse = ref.dna(json.loads(json.dumps(raw)))[0]
        written = ref.dna(json.loads(serialise(manifest.to_dict())))[0]
        if want != sparse or want != written:
            bad += 1
            if bad <= 3:
                print("MISMATCH", json.dumps(raw)[:800], want == sparse, want == written)
    print(f"{tried} documents, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
