"""The Python environment: interpreter, key packages (read from metadata, never imported), OS."""

from __future__ import annotations

import os
import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from expdna.collectors.context import CollectContext

#: Packages whose versions the manifest lists by name.
KEY_PACKAGES: tuple[str, ...] = (
    "torch", "ray", "numpy", "transformers", "megatron-core", "deepspeed", "accelerate",
    "vllm", "sglang", "flash-attn", "triton", "jax", "jaxlib", "torchvision", "pyarrow",
    "expdna",
)


def key_packages(names: tuple[str, ...] = KEY_PACKAGES) -> dict[str, str]:
    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def os_release(path: Path = Path("/etc/os-release")) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = dict(
        line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#")
    )
    name = fields.get("PRETTY_NAME") or fields.get("NAME")
    return name.strip().strip('"') if name else None


def glibc_version() -> str | None:
    try:
        found = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"
    except (AttributeError, ValueError, OSError):
        return None
    return found.split()[-1] if found else None


def collect_environment(ctx: CollectContext) -> dict[str, Any]:
    return {
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_build": " ".join(platform.python_build()),
        "python_executable": sys.executable,
        "packages": key_packages(),
        "os": os_release() or platform.system(),
        "kernel": platform.release(),
        "glibc": glibc_version(),
    }
