"""The machine as the OS reports it: CPU model, cores, memory."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

from expdna.collectors.context import CollectContext


def _cpuinfo(path: Path = Path("/proc/cpuinfo")) -> dict[str, str]:
    fields: dict[str, str] = {}
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break  # the first processor block says it all
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def _memory_gb(path: Path = Path("/proc/meminfo")) -> float | None:
    try:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def collect_system(ctx: CollectContext) -> dict[str, Any]:
    cpu = _cpuinfo()
    return {
        "cpu_model": cpu.get("model name") or platform.processor() or None,
        "cpu_microcode": cpu.get("microcode"),
        "cpu_count": os.cpu_count(),
        "memory_gb": _memory_gb(),
        "machine": platform.machine(),
    }
