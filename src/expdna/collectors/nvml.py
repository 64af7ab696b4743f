"""NVML (``nvidia-ml-py``'s ``pynvml``) as a GPU source, through a thin adapter.

The adapter takes the module as a value, so tests hand it an object with pynvml's function
names that replays values recorded on real GPUs. Every getter is wrapped on its own: a
"not supported" (or a function an old driver or binding lacks) is recorded as ``None``,
never an abort. Strings may come back as bytes (old bindings) or fail to decode (WSL).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any

from expdna.collectors.nvidia_smi import (
    GpuReport,
    SourceAbsent,
    SourceFailed,
    clean,
    cuda_from_int,
    empty_gpu,
    vbios,
)

log = logging.getLogger(__name__)

# NVML return codes (nvml.h): the ones that mean "no NVML here" rather than "broken".
_LIBRARY_NOT_FOUND = 12
_DRIVER_NOT_LOADED = 9
_ABSENT_CODES = frozenset({_LIBRARY_NOT_FOUND, _DRIVER_NOT_LOADED})
# A getter that answers with these has nothing to say about this device: quietly None.
_NOT_SUPPORTED = 3
_FUNCTION_NOT_FOUND = 13
_QUIET_CODES = frozenset({_NOT_SUPPORTED, _FUNCTION_NOT_FOUND})
_ENABLED = 1  # NVML_DEVICE_MIG_ENABLE, NVML_FEATURE_ENABLED


def load_pynvml() -> Any:
    """The installed ``pynvml`` module (from ``nvidia-ml-py``), or SourceAbsent."""
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        raise SourceAbsent("pynvml (nvidia-ml-py) is not installed") from None


class Nvml:
    """Reads one :class:`GpuReport` from a pynvml-like module ``lib``."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self.warnings: list[str] = []

    def _code(self, exc: BaseException) -> int | None:
        value = getattr(exc, "value", None)
        return value if isinstance(value, int) else None

    def _get(self, name: str, *args: Any) -> Any:
        """``lib.<name>(*args)``, or None when unsupported, missing or failing."""
        fn: Callable[..., Any] | None = getattr(self.lib, name, None)
        if fn is None:
            return None  # an older binding without this getter
        try:
            return fn(*args)
        except self.lib.NVMLError as exc:
            if self._code(exc) not in _QUIET_CODES:
                self.warnings.append(f"{name}: {exc}")
            return None
        except UnicodeDecodeError as exc:  # the binding's own .decode() (seen on WSL)
            self.warnings.append(f"{name}: {exc}")
            return None

    def _enabled(self, name: str, handle: Any) -> str | None:
        modes = self._get(name, handle)  # [current, pending]
        if not modes:
            return None
        return "Enabled" if modes[0] == _ENABLED else "Disabled"

    def _device(self, index: int) -> dict[str, Any]:
        handle = self.lib.nvmlDeviceGetHandleByIndex(index)
        gpu = empty_gpu(index)
        memory = self._get("nvmlDeviceGetMemoryInfo", handle)
        total = getattr(memory, "total", None)
        pci = self._get("nvmlDeviceGetPciInfo", handle)
        capability = self._get("nvmlDeviceGetCudaComputeCapability", handle)
        power_mw = self._get("nvmlDeviceGetPowerManagementLimit", handle)
        gpu.update(
            name=clean(self._get("nvmlDeviceGetName", handle)),
            memory_gb=round(total / 2**30, 1) if isinstance(total, int) else None,
            uuid=clean(self._get("nvmlDeviceGetUUID", handle)),
            serial=clean(self._get("nvmlDeviceGetSerial", handle)),
            pci_bus_id=clean(getattr(pci, "busId", None)),
            vbios_version=vbios(self._get("nvmlDeviceGetVbiosVersion", handle)),
            inforom_version=clean(self._get("nvmlDeviceGetInforomImageVersion", handle)),
            board_part_number=clean(self._get("nvmlDeviceGetBoardPartNumber", handle)),
            pcie_gen_current=self._get("nvmlDeviceGetCurrPcieLinkGeneration", handle),
            pcie_gen_max=self._get("nvmlDeviceGetMaxPcieLinkGeneration", handle),
            pcie_width_current=self._get("nvmlDeviceGetCurrPcieLinkWidth", handle),
            pcie_width_max=self._get("nvmlDeviceGetMaxPcieLinkWidth", handle),
            compute_capability=(f"{capability[0]}.{capability[1]}" if capability else None),
            mig_mode=self._enabled("nvmlDeviceGetMigMode", handle),
            ecc_mode=self._enabled("nvmlDeviceGetEccMode", handle),
            power_limit_w=power_mw / 1000 if isinstance(power_mw, int) else None,
        )
        return gpu

    def _mig_parents(self, count: int) -> dict[str, int]:
        parents: dict[str, int] = {}
        for index in range(count):
            handle = self.lib.nvmlDeviceGetHandleByIndex(index)
            for slot in range(self._get("nvmlDeviceGetMaxMigDeviceCount", handle) or 0):
                mig = self._get("nvmlDeviceGetMigDeviceHandleByIndex", handle, slot)
                uuid = clean(self._get("nvmlDeviceGetUUID", mig)) if mig is not None else None
                if uuid:
                    parents[uuid] = index
        return parents

    def read(self, *, mig: bool = False) -> GpuReport:
        """Every GPU the driver lists; ``mig`` also maps MIG device UUIDs to their GPU.

        Raises SourceAbsent when NVML is not here (no library, no driver) and SourceFailed
        when it is here but will not start or count devices.
        """
        lib = self.lib
        try:
            lib.nvmlInit()
        except lib.NVMLError as exc:
            if self._code(exc) in _ABSENT_CODES:
                raise SourceAbsent(f"NVML: {exc}") from None
            raise SourceFailed(f"NVML init: {exc}") from None
        try:
            count = lib.nvmlDeviceGetCount()
            cuda = self._get("nvmlSystemGetCudaDriverVersion_v2")
            if cuda is None:
                cuda = self._get("nvmlSystemGetCudaDriverVersion")
            report = GpuReport(
                source="nvml",
                driver_version=clean(self._get("nvmlSystemGetDriverVersion")),
                cuda_driver_version=cuda_from_int(cuda),
                gpus=[self._device(i) for i in range(count)],
            )
            if mig:
                report.mig_parents = self._mig_parents(count)
            return report
        except lib.NVMLError as exc:
            raise SourceFailed(f"NVML: {exc}") from None
        finally:
            try:
                lib.nvmlShutdown()
            except lib.NVMLError as exc:
                log.debug("nvmlShutdown: %s", exc)
