"""The machine as the OS reports it: CPU model, numeric instruction-set flags, cores, memory."""

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


#: CPU flags that choose numeric kernels (oneDNN, MKL, OpenBLAS pick code paths by them).
NUMERIC_CPU_FLAGS = ("avx", "avx2", "fma", "f16c", "avx512", "amx", "sse4_2", "asimd", "sve")


def cpu_flags(cpu: dict[str, str]) -> list[str] | None:
    """The numeric instruction-set flags of ``/proc/cpuinfo`` (x86 ``flags``, Arm
    ``Features``), sorted; None where the file says nothing."""
    words = (cpu.get("flags") or cpu.get("Features") or "").split()
    if not words:
        return None
    return sorted({w for w in words if w.startswith(NUMERIC_CPU_FLAGS)})


def collect_system(ctx: CollectContext) -> dict[str, Any]:
    cpu = _cpuinfo()
    return {
        "cpu_model": cpu.get("model name") or platform.processor() or None,
        "cpu_microcode": cpu.get("microcode"),
        "cpu_flags": cpu_flags(cpu),
        "cpu_count": os.cpu_count(),
        "memory_gb": _memory_gb(),
        "machine": platform.machine(),
    }
