"""The GPU collector on a recorded machine: expdna's real code, a stand-in nvidia-smi.

The docs are written on a machine without a GPU. This runs ``expdna.collect()`` with the
``gpu`` collector's sources pointed at :mod:`nvidia_smi_standin` (a real subprocess that
prints a real recorded nvidia-smi output) and at a file standing for ``/dev/nvidiactl``.
NVML is the real ``pynvml``: without a driver library it reports itself absent, so the
chain moves on to nvidia-smi exactly as it would on a machine whose NVML is missing.

    python gpu_replay.py RECORDING [--visible CUDA_VISIBLE_DEVICES] [--brief] [-o FILE]

RECORDING is a path under tests/data/nvidia-smi, or ``no-driver``. The stand-in
program and the driver marker are written to ``./standin/``.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from pathlib import Path

import expdna
from expdna.collectors import Collector, default_registry
from expdna.collectors.gpu import GpuSources, collect_gpu_from

STANDIN = Path(__file__).resolve().with_name("nvidia_smi_standin.py")


def standin(recording: str, workdir: Path) -> Path:
    """An executable ``nvidia-smi`` that answers from ``recording``."""
    exe = workdir / "nvidia-smi"
    target = recording if recording == "no-driver" else str(Path(recording).resolve())
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STANDIN}" "{target}" "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("recording")
    parser.add_argument("--visible", help="CUDA_VISIBLE_DEVICES for the job (unset if absent)")
    parser.add_argument("--brief", action="store_true", help="one line: what the job sees")
    parser.add_argument("-o", "--output", help="also write the whole manifest here")
    args = parser.parse_args()

    workdir = Path("standin")
    workdir.mkdir(exist_ok=True)
    driver = workdir / "nvidiactl"  # stands for /dev/nvidiactl: "a driver is here"
    driver.touch()
    sources = GpuSources(nvidia_smi=str(standin(args.recording, workdir)), driver_paths=(driver,))
    registry = default_registry(plugins=False)
    registry.collectors["gpu"] = Collector(
        "gpu", "hardware", lambda ctx: collect_gpu_from(ctx, sources)
    )
    environ = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    if args.visible is not None:
        environ["CUDA_VISIBLE_DEVICES"] = args.visible
    names = None if args.output else ["gpu"]
    manifest = expdna.collect(environ=environ, registry=registry, collectors=names)

    hardware = manifest.to_dict()["hardware"]
    status = manifest.collection.collectors["gpu"]
    if args.output:
        path = expdna.write_manifest(manifest, args.output)
        print(f"wrote {path}")
    if args.brief:
        visible = "(unset)" if args.visible is None else repr(args.visible)
        gpus = ", ".join(f"[{g['index']}] {g['pci_bus_id']}" for g in hardware["gpus"])
        print(
            f"CUDA_VISIBLE_DEVICES={visible:<43} {hardware['gpu_source']:<15} "
            f"gpu_count {hardware['gpu_count']}" + (f": {gpus}" if gpus else "")
        )
        return
    shown = {
        k: v
        for k, v in hardware.items()
        if k not in ("cpu_model", "cpu_count", "memory_gb", "cpu_microcode", "machine")
    }
    print(json.dumps(shown, indent=2))
    print(json.dumps({"gpu": status.model_dump()}, indent=2))


if __name__ == "__main__":
    main()
