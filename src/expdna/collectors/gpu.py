"""The GPUs this job can see, and the CUDA, cuDNN and NCCL it runs with (section hardware).

Sources, first that answers wins and is recorded in ``gpu_source``:
NVML -> ``nvidia-smi --query-gpu`` CSV -> ``nvidia-smi -q -x`` XML -> torch.cuda (only when
the caller imported torch *and* already initialised CUDA: collecting never initialises CUDA,
which would change what a later ``fork`` can do) -> nothing.

"No GPU" is a fact, recorded as ``gpu_count: 0`` with status ok, only when no source exists
and no trace of an NVIDIA driver does either; a source that exists but fails, or a driver
nobody could read, leaves ``gpu_count`` unknown (``None``) and the status partial. On Linux,
where CUDA cannot work without ``/dev/nvidiactl``, ``/proc/driver/nvidia`` (the loaded kernel
module) or WSL's ``/dev/dxg``, a machine with none of them skips NVML and nvidia-smi: no
library import, no process, a few milliseconds.

Only GPUs visible to the job are listed, in ``CUDA_VISIBLE_DEVICES`` order (so ``gpus[i]``
is ``cuda:i``). Indexes there are read in the driver's (PCI bus) order, which is CUDA's
order when ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` or when the GPUs are all alike.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from expdna.collectors import nvidia_smi
from expdna.collectors.context import CollectContext, Partial
from expdna.collectors.framework import (
    dotted_version,
    installed_version,
    loaded_torch,
    loaded_versions,
    torch_build,
)
from expdna.collectors.nvidia_smi import (
    GpuReport,
    SourceAbsent,
    SourceFailed,
    clean,
    cuda_from_int,
    empty_gpu,
)
from expdna.collectors.nvml import Nvml, load_pynvml
from expdna.collectors.process import Runner, run

log = logging.getLogger(__name__)

#: Paths of which one exists wherever an NVIDIA driver can serve CUDA on Linux: the control
#: node (injected into GPU containers too), the loaded kernel module, WSL2's GPU bridge.
DRIVER_PATHS: tuple[Path, ...] = (
    Path("/dev/nvidiactl"),
    Path("/proc/driver/nvidia"),
    Path("/dev/dxg"),
)
#: pip wheels that ship the libraries torch (and JAX) load, newest CUDA major first.
_CUDNN_WHEELS = ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12", "nvidia-cudnn-cu11")
_NCCL_WHEELS = ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")
# Of the collector's deadline, what the nvidia-smi runs may use; the rest is for the answer.
_BUDGET_SHARE = 0.9


@dataclass(frozen=True)
class GpuSources:
    """Where the GPU facts come from; tests swap in recorded replays."""

    runner: Runner = run
    load_nvml: Callable[[], Any] = load_pynvml
    torch: Callable[[], ModuleType | None] = loaded_torch
    nvidia_smi: str | None = None  # the program; None: looked up on the job's PATH
    driver_paths: Sequence[Path] = DRIVER_PATHS
    #: Whether a machine without any ``driver_paths`` skips NVML and nvidia-smi (Linux only:
    #: elsewhere those paths mean nothing).
    trust_driver_paths: bool = sys.platform.startswith("linux")


def driver_evidence(paths: Sequence[Path]) -> str | None:
    """The first of ``paths`` that exists: a trace of an NVIDIA driver, or None."""
    return next((str(p) for p in paths if os.path.exists(p)), None)


@dataclass
class _Session:
    ctx: CollectContext
    sources: GpuSources
    want_mig: bool
    deadline: float
    driver: str | None
    warnings: list[str] = field(default_factory=list)
    _exe: str | None = None

    def left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise SourceFailed("no time left before the collector's deadline")
        return left

    def has_time(self) -> bool:
        return self.deadline > time.monotonic()

    def need_driver(self) -> None:
        if self.driver is None and self.sources.trust_driver_paths:
            raise SourceAbsent("no NVIDIA driver here")

    def exe(self) -> str:
        self.need_driver()
        if self._exe is None:
            found = self.sources.nvidia_smi or shutil.which(
                "nvidia-smi", path=self.ctx.environ.get("PATH", os.defpath)
            )
            if not found:
                raise SourceAbsent("nvidia-smi is not on PATH")
            self._exe = found
        return self._exe


# --- the sources, in order ----------------------------------------------------------------


def _from_nvml(session: _Session) -> GpuReport:
    session.need_driver()
    adapter = Nvml(session.sources.load_nvml())
    report = adapter.read(mig=session.want_mig)
    session.warnings.extend(adapter.warnings)
    return report


def _add_mig_parents(session: _Session, exe: str, report: GpuReport) -> None:
    if session.want_mig and session.has_time():
        report.mig_parents = nvidia_smi.query_mig_parents(
            exe, runner=session.sources.runner, timeout_s=session.left()
        )


def _from_csv(session: _Session) -> GpuReport:
    exe, runner = session.exe(), session.sources.runner
    report = nvidia_smi.query_csv(exe, runner=runner, timeout_s=session.left())
    # --query-gpu has no CUDA version field; --version prints it (drivers 525+).
    if session.has_time():
        report.cuda_driver_version = nvidia_smi.query_cuda_version(
            exe, runner=runner, timeout_s=session.left()
        )
    _add_mig_parents(session, exe, report)
    return report


def _from_xml(session: _Session) -> GpuReport:
    exe = session.exe()
    report = nvidia_smi.query_xml(exe, runner=session.sources.runner, timeout_s=session.left())
    _add_mig_parents(session, exe, report)
    return report


def _torch_gpu(index: int, props: Any) -> dict[str, Any]:
    gpu = empty_gpu(index)
    uuid = clean(getattr(props, "uuid", None))
    if uuid and not uuid.startswith(("GPU-", "MIG-")):
        uuid = f"GPU-{uuid}"
    pci = [getattr(props, f"pci_{part}_id", None) for part in ("domain", "bus", "device")]
    major, minor = getattr(props, "major", None), getattr(props, "minor", None)
    total = getattr(props, "total_memory", None)
    gpu.update(
        name=clean(getattr(props, "name", None)),
        memory_gb=round(total / 2**30, 1) if isinstance(total, int) else None,
        uuid=uuid,
        pci_bus_id=(
            f"{pci[0]:08X}:{pci[1]:02X}:{pci[2]:02X}.0"
            if all(isinstance(p, int) for p in pci)
            else None
        ),
        compute_capability=f"{major}.{minor}" if major is not None else None,
    )
    return gpu


def _from_torch(session: _Session) -> GpuReport:
    torch = session.sources.torch()
    if torch is None:
        raise SourceAbsent("torch is not imported")
    cuda = torch.cuda
    if not cuda.is_initialized():
        if getattr(torch.version, "cuda", None):
            raise SourceFailed("torch has not initialised CUDA; collecting does not do it")
        raise SourceAbsent("torch is a CPU build")
    try:
        gpus = [_torch_gpu(i, cuda.get_device_properties(i)) for i in range(cuda.device_count())]
    except Exception as exc:  # a CUDA error here must not break the run
        raise SourceFailed(f"torch.cuda: {exc}") from None
    try:
        driver = torch._C._cuda_getDriverVersion()  # private API: optional
    except Exception:
        driver = None
    # torch already lists only the visible devices, as cuda:0..n-1.
    return GpuReport(source="torch", cuda_driver_version=cuda_from_int(driver), gpus=gpus)


#: The sources in the order they are tried.
SOURCES: tuple[tuple[str, Callable[[_Session], GpuReport]], ...] = (
    ("nvml", _from_nvml),
    ("nvidia-smi-csv", _from_csv),
    ("nvidia-smi-xml", _from_xml),
    ("torch", _from_torch),
)


# --- which GPUs the job sees --------------------------------------------------------------


def _tokens(environ: Mapping[str, str]) -> list[str] | None:
    raw = environ.get("CUDA_VISIBLE_DEVICES")
    return None if raw is None else [t.strip() for t in raw.split(",")]


def _by_uuid(prefix: str, uuids: Mapping[str, int]) -> int | None:
    # CUDA accepts any unique prefix of a UUID.
    matches = {i for uuid, i in uuids.items() if uuid.lower().startswith(prefix.lower())}
    return matches.pop() if len(matches) == 1 else None


def _resolve(token: str, report: GpuReport) -> int | None:
    """The driver index ``token`` names, or None when CUDA would reject it."""
    if token.isdigit():
        index = int(token)
        return index if any(g["index"] == index for g in report.gpus) else None
    gpu_uuids = {g["uuid"]: g["index"] for g in report.gpus if g["uuid"]}
    if token.startswith("MIG-GPU-"):  # CUDA 11.0's form: MIG-GPU-<uuid>/<gi>/<ci>
        return _by_uuid(token[4:].split("/", 1)[0], gpu_uuids)
    if token.startswith("MIG-"):
        return _by_uuid(token, report.mig_parents)
    if token.startswith("GPU-"):
        return _by_uuid(token, gpu_uuids)
    return None


def visible_gpus(report: GpuReport, environ: Mapping[str, str]) -> list[dict[str, Any]]:
    """The GPUs ``CUDA_VISIBLE_DEVICES`` lets the job use, in its order."""
    tokens = _tokens(environ)
    if tokens is None or report.source == "torch":
        return list(report.gpus)
    by_index = {g["index"]: g for g in report.gpus}
    chosen: list[int] = []
    for token in tokens:
        index = _resolve(token, report)
        if index is None:
            break  # CUDA ignores every entry from the first invalid one on
        if index not in chosen:  # several MIG devices of one GPU name it once
            chosen.append(index)
    return [by_index[i] for i in chosen]


def _none_visible(environ: Mapping[str, str]) -> bool:
    tokens = _tokens(environ)
    return tokens is not None and (not tokens[0] or tokens[0].startswith("-"))


def _gpu_model(gpus: Sequence[Mapping[str, Any]]) -> str | None:
    names = sorted({g["name"] for g in gpus if g.get("name")})
    if not names:
        return None
    return names[0] if len(names) == 1 else "mixed: " + ", ".join(names)


# --- library versions ---------------------------------------------------------------------


def _wheel_version(names: Sequence[str]) -> str | None:
    for name in names:
        found = installed_version(name)
        if found:
            return ".".join(found.split(".")[:3])  # "9.1.0.70" -> "9.1.0", as torch says
    return None


def _versioned(value: str | None, source: str) -> tuple[str | None, str | None]:
    return value, (source if value is not None else None)


def library_versions(torch: ModuleType | None, driver_cuda: str | None) -> dict[str, Any]:
    """``cuda_version`` (the runtime torch uses, else the driver's), cuDNN and NCCL.

    A loaded torch is the truth; without one, the installed torch build and the nvidia-*
    wheels say what a ``import torch`` here would load. Each ``*_source`` says which.
    """
    if torch is not None:
        loaded = loaded_versions(torch)
        cuda = _versioned(loaded["cuda"], "torch")
        cudnn = _versioned(loaded["cudnn_version"], "torch")
        nccl = _versioned(loaded["nccl_version"], "torch")
    else:
        build = torch_build() or {}
        cuda = _versioned(clean(build.get("cuda")), "torch-installed")
        cudnn = _versioned(_wheel_version(_CUDNN_WHEELS), "package")
        nccl = _versioned(_wheel_version(_NCCL_WHEELS), "package")
    if cuda[0] is None:
        cuda = _versioned(driver_cuda, "driver")
    return {
        "cuda_version": cuda[0],
        "cuda_version_source": cuda[1],
        "cudnn_version": dotted_version(cudnn[0]),
        "cudnn_version_source": cudnn[1],
        "nccl_version": dotted_version(nccl[0]),
        "nccl_version_source": nccl[1],
    }


# --- the collector ------------------------------------------------------------------------


def _probe(session: _Session) -> tuple[GpuReport | None, list[str]]:
    failures: list[str] = []
    for name, source in SOURCES:
        try:
            return source(session), failures
        except SourceAbsent as exc:
            log.debug("gpu source %s absent: %s", name, exc)
        except SourceFailed as exc:
            log.info("gpu source %s failed: %s", name, exc)
            failures.append(f"{name}: {exc}")
    return None, failures


def collect_gpu_from(ctx: CollectContext, sources: GpuSources) -> dict[str, Any]:
    """:func:`collect_gpu` with its sources given (tests replay recorded outputs)."""
    tokens = _tokens(ctx.environ) or []
    session = _Session(
        ctx,
        sources,
        want_mig=any(t.startswith("MIG-") for t in tokens),
        deadline=time.monotonic() + ctx.timeout_s * _BUDGET_SHARE,
        driver=driver_evidence(sources.driver_paths),
    )
    report, failures = _probe(session)
    section: dict[str, Any] = {
        "gpu_source": report.source if report else None,
        "gpu_model": None,
        "gpu_count": None,
        "gpus": [],
        "driver_version": report.driver_version if report else None,
        "cuda_driver_version": report.cuda_driver_version if report else None,
    }
    section.update(library_versions(sources.torch(), section["cuda_driver_version"]))
    if report is not None:
        gpus = visible_gpus(report, ctx.environ)
        section.update(gpus=gpus, gpu_count=len(gpus), gpu_model=_gpu_model(gpus))
        if session.warnings:
            raise Partial(section, "; ".join(session.warnings))
        return section
    if _none_visible(ctx.environ) or (not failures and session.driver is None):
        section["gpu_count"] = 0  # nothing to list: a fact, not a failure
        return section
    reasons = failures or [
        f"an NVIDIA driver is present ({session.driver}) but no source listed GPUs"
    ]
    raise Partial(section, "; ".join(reasons))


def collect_gpu(ctx: CollectContext) -> dict[str, Any]:
    """Section ``hardware``: the GPUs, driver, CUDA, cuDNN and NCCL (see module doc)."""
    return collect_gpu_from(ctx, GpuSources())
