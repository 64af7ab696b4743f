"""Realistic synthetic manifests for the store tests (and their own sanity checks).

A manifest here has about 80 leaves, as real runs do: two repositories (one dirty, with a
patch), a few dozen resolved args, a dozen packages, GPUs with VBIOS versions, a Ray
runtime, a dataset and final metrics.
"""

from __future__ import annotations

from typing import Any

from expdna.digest import ref_of
from expdna.manifest.dna import compute_dna
from expdna.manifest.io import manifest_from_dict
from expdna.manifest.model import Manifest

VBIOS = "96.00.89.00.01"
DRIVER = "550.54.15"
PATCH_TEXT = (
    "diff --git a/train.py b/train.py\n--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n-lr=1\n+lr=2\n"
)


def synthetic_doc(
    i: int,
    *,
    setup: int | None = None,
    vbios: str = "96.00.5A.00.01",
    driver: str = "535.104.05",
    patch: str | None = PATCH_TEXT,
    run_id: str | None = None,
) -> dict[str, Any]:
    """Manifest ``i``; runs with the same ``setup`` share a DNA (``setup`` defaults to i)."""
    setup = i if setup is None else setup
    code: dict[str, Any] = {
        "train": {
            "commit": f"{setup % 97:02x}" + "1c8e2fb98b7af3e1e86263ccd1f375e4d833b2"[:38],
            "branch": "main",
            "dirty": patch is not None,
            "remote": "https://github.com/example/train.git",
        },
        "megatron": {"commit": "8325919e7a2f4c3d1b5e8f9a0c2d3e4f5a6b7c8d", "dirty": False},
    }
    if patch is not None:
        data = patch.encode()
        code["train"]["patch"] = {"digest": ref_of(data), "size": len(data), "text": patch}
    args: dict[str, Any] = {
        "lr": 0.0003,
        "seed": setup,
        "global_batch_size": 16,
        "output_dir": f"/ckpt/run{i}",
    }
    args.update({f"option_{k}": k * 0.5 for k in range(20)})
    return {
        "schema_version": "1.0",
        "run_id": run_id or f"20260805_{143025 + i // 60:06d}_1c8e2fb_{i:06d}",
        "generated_at": f"2026-08-05T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}Z",
        "command": {"argv": ["python", "train.py", "--lr", "0.0003"], "cwd": "<HOME>/train"},
        "code": code,
        "config": {"resolved_args": args, "selected_env": {"NCCL_DEBUG": "INFO"}},
        "training": {
            "algorithm": "grpo",
            "parallel_topology": {"tensor": 2, "pipeline": 1},
            "global_batch_size": 16,
            "seeds": {"seed": setup},
        },
        "environment": {
            "python_version": "3.12.3",
            "python_implementation": "CPython",
            "packages": {
                "torch": "2.11.0+cu129",
                "ray": "2.56.0",
                **{f"package-{k}": f"{k}.{k + 1}.0" for k in range(10)},
            },
            "os": "Debian GNU/Linux 12 (bookworm)",
            "kernel": "6.1.0-18-amd64",
            "glibc": "2.36",
        },
        "hardware": {
            "gpus": [
                {
                    "name": "NVIDIA H100 80GB HBM3",
                    "memory_gb": 79.6,
                    "vbios_version": vbios,
                    "uuid": f"GPU-{n}",
                }
                for n in range(2)
            ],
            "gpu_model": "NVIDIA H100 80GB HBM3",
            "gpu_count": 2,
            "driver_version": driver,
            "cuda_version": "12.4",
            "nccl_version": "2.23.4",
            "cpu_model": "Intel(R) Xeon(R) Platinum 8480+",
            "cpu_count": 224,
        },
        "runtime": {
            "mode": "single_node_ray",
            "node_count": 1,
            "nodes": [{"role": "head", "resources": {"CPU": 224.0, "GPU": 2.0}}],
        },
        "data": {
            "datasets": [
                {"root": "/data/set", "digest": ref_of(b"listing"), "files": 3, "bytes": 300}
            ]
        },
        "metrics": {"final_loss": 1.0 / (i + 1), "reward": {"mean": 0.5}},
        "collection": {"collectors": {"git": {"status": "ok", "duration_ms": 1.5 + i}}},
    }


def synthetic(i: int, **kwargs: Any) -> Manifest:
    """:func:`synthetic_doc` as a validated manifest with its DNA."""
    manifest = manifest_from_dict(synthetic_doc(i, **kwargs))
    manifest.dna = compute_dna(manifest)
    return manifest


def test_same_setup_same_dna_other_setup_other_dna() -> None:
    a, b, c = synthetic(1, setup=7), synthetic(2, setup=7), synthetic(3, setup=8)
    assert a.dna is not None and b.dna is not None and c.dna is not None
    assert a.run_id != b.run_id
    assert a.dna.value == b.dna.value != c.dna.value


def test_about_eighty_leaves() -> None:
    from expdna.store.record.flatten import flatten

    facts, metrics = flatten(synthetic(1).to_dict())
    assert 70 <= len(facts) <= 100
    assert metrics == {"final_loss": 0.5, "reward.mean": 0.5}
