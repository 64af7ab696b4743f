"""An expdna collector plugin: the CPU's vector-instruction flags.

Which of these a CPU has decides the kernels oneDNN and OpenBLAS pick, so CPU results can
differ between two hosts with the same model name. Section ``hardware``, key ``cpu_flags``.
"""

from __future__ import annotations

from pathlib import Path

from expdna.collectors import CollectContext, Collector, NotAvailable

#: The flags worth recording (x86 and arm64 names), in this order.
WANTED = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512_bf16",
    "avx512_fp16",
    "avx512_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "asimd",
    "sve",
    "sve2",
)


def collect_cpu_flags(ctx: CollectContext) -> dict[str, object]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        raise NotAvailable("no /proc/cpuinfo here") from None  # status: skipped
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):  # x86, arm64
            present = set(value.split())
            return {"cpu_flags": [flag for flag in WANTED if flag in present]}
    raise NotAvailable("/proc/cpuinfo lists no flags")


#: What the entry point names: a Collector (name, section, function, own deadline).
CPU_FLAGS = Collector("cpu_flags", "hardware", collect_cpu_flags, deadline_s=1.0)
