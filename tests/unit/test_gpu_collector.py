"""The GPU collector: source order, visibility, versions, and this GPU-less machine.

This machine has no GPU, so the NVML and nvidia-smi paths replay values recorded on real
GPUs (tests/data/nvidia-smi); the no-GPU path runs for real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest

from expdna.collectors import default_registry
from expdna.collectors.context import CollectContext, Partial
from expdna.collectors.gpu import (
    DRIVER_PATHS,
    GpuSources,
    collect_gpu,
    collect_gpu_from,
    driver_evidence,
    library_versions,
)
from expdna.collectors.nvidia_smi import GPU_KEYS, SourceAbsent
from expdna.collectors.nvml import Nvml, load_pynvml
from expdna.collectors.runner import Collector, run_collectors
from expdna.manifest.dna import projections
from tests.factories import NO_DRIVER, Replay, capture_section, query_output, smi_dir

H200 = "gpuexporter_h200_driver-590.48.01_capture.txt"
MIG = "gpuexporter_h100-80gb-hbm3_mig_driver-590.48.01_capture.txt"
K80 = "pai_4x-tesla-k80_driver-430.26.xml"
A5000 = "telegraf_2x-rtx-a5000_driver-590.44.01.xml"
NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED

# --- a pynvml replaying devices recorded in the captures -----------------------------------

#: The H200 capture (590.48.01), as NVML returns it: bytes where old bindings give bytes,
#: ints for what nvidia-smi prints with units (bytes, milliwatts), lists for modes.
H200_DEVICE: dict[str, Any] = {
    "nvmlDeviceGetName": b"NVIDIA H200",
    "nvmlDeviceGetMemoryInfo": SimpleNamespace(total=143771 * 2**20, free=0, used=0),
    "nvmlDeviceGetUUID": "GPU-00000000-0000-0000-0000-000000000000",
    "nvmlDeviceGetSerial": "0000000000000",
    "nvmlDeviceGetPciInfo": SimpleNamespace(busId=b"00000000:83:00.0"),
    "nvmlDeviceGetVbiosVersion": "96.00.A5.00.03",
    "nvmlDeviceGetInforomImageVersion": "G520.0280.02.02",
    "nvmlDeviceGetBoardPartNumber": "695-2G520-0280-001",
    "nvmlDeviceGetCurrPcieLinkGeneration": 5,
    "nvmlDeviceGetMaxPcieLinkGeneration": 5,
    "nvmlDeviceGetCurrPcieLinkWidth": 16,
    "nvmlDeviceGetMaxPcieLinkWidth": 16,
    "nvmlDeviceGetCudaComputeCapability": (9, 0),
    "nvmlDeviceGetMigMode": [0, 0],
    "nvmlDeviceGetEccMode": [1, 1],
    "nvmlDeviceGetPowerManagementLimit": 700000,
}
#: The RTX 4080 SUPER capture (595.71.05): "N/A" in nvidia-smi is NotSupported in NVML.
RTX4080_DEVICE: dict[str, Any] = {
    "nvmlDeviceGetName": "NVIDIA GeForce RTX 4080 SUPER",
    "nvmlDeviceGetMemoryInfo": SimpleNamespace(total=16376 * 2**20, free=0, used=0),
    "nvmlDeviceGetUUID": "GPU-00000000-0000-0000-0000-000000000000",
    "nvmlDeviceGetSerial": pynvml.NVMLError(NOT_SUPPORTED),
    "nvmlDeviceGetPciInfo": SimpleNamespace(busId="00000000:01:00.0"),
    "nvmlDeviceGetVbiosVersion": "95.03.44.00.B2",
    "nvmlDeviceGetInforomImageVersion": "G002.0000.00.03",
    "nvmlDeviceGetBoardPartNumber": pynvml.NVMLError(NOT_SUPPORTED),
    "nvmlDeviceGetCurrPcieLinkGeneration": 1,
    "nvmlDeviceGetMaxPcieLinkGeneration": 4,
    "nvmlDeviceGetCurrPcieLinkWidth": 16,
    "nvmlDeviceGetMaxPcieLinkWidth": 16,
    "nvmlDeviceGetCudaComputeCapability": (8, 9),
    "nvmlDeviceGetMigMode": pynvml.NVMLError(NOT_SUPPORTED),
    "nvmlDeviceGetEccMode": pynvml.NVMLError(NOT_SUPPORTED),
    "nvmlDeviceGetPowerManagementLimit": 320000,
}


class FakePynvml:
    """pynvml's function names over recorded values; errors are the real pynvml classes."""

    NVMLError = pynvml.NVMLError

    def __init__(
        self,
        devices: list[dict[str, Any]],
        *,
        driver: str = "590.48.01",
        cuda: int = 13010,
        init_error: int | None = None,
        migs: Mapping[int, list[str]] | None = None,
        missing: tuple[str, ...] = (),
    ) -> None:
        self.devices = devices
        self.system = {
            "nvmlSystemGetDriverVersion": driver,
            "nvmlSystemGetCudaDriverVersion_v2": cuda,
        }
        self.init_error = init_error
        self.migs = dict(migs or {})
        self.missing = missing
        self.calls: list[str] = []
        self.open = 0

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name in self.missing or not name.startswith("nvml"):
            raise AttributeError(name)
        if name in self.system:
            return lambda: self._answer(name, self.system[name])
        return lambda handle, *args: self._device_call(name, handle, *args)

    def _answer(self, name: str, value: Any) -> Any:
        self.calls.append(name)
        if self.open <= 0:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_UNINITIALIZED)
        if isinstance(value, BaseException):
            raise value
        return value

    def _device_call(self, name: str, handle: Any, *args: Any) -> Any:
        if name == "nvmlDeviceGetMaxMigDeviceCount":
            return self._answer(name, len(self.migs.get(handle, [])))
        if name == "nvmlDeviceGetMigDeviceHandleByIndex":
            return self._answer(name, ("mig", handle, args[0]))
        if isinstance(handle, tuple):  # a MIG device handle: only its UUID is asked
            return self._answer(name, self.migs[handle[1]][handle[2]])
        return self._answer(
            name,
            self.devices[handle].get(name, pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)),
        )

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise pynvml.NVMLError(self.init_error)
        self.open += 1

    def nvmlShutdown(self) -> None:
        self.open -= 1

    def nvmlDeviceGetCount(self) -> int:
        return self._answer("nvmlDeviceGetCount", len(self.devices))

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return self._answer("nvmlDeviceGetHandleByIndex", index)


def _absent() -> Any:
    raise SourceAbsent("pynvml (nvidia-ml-py) is not installed")


def ctx(environ: Mapping[str, str] | None = None, timeout_s: float = 4.0) -> CollectContext:
    return CollectContext(environ=dict(environ or {"PATH": ""}), timeout_s=timeout_s)


#: A path that exists, standing for /dev/nvidiactl: the replayed machines have a driver.
DRIVER_HERE = (Path(__file__),)


def sources(**kwargs: Any) -> GpuSources:
    """No real NVML, nvidia-smi or torch unless a test names one; a driver is "present"."""
    defaults: dict[str, Any] = {
        "load_nvml": _absent,
        "torch": lambda: None,
        "driver_paths": DRIVER_HERE,
        "nvidia_smi": None,
        "trust_driver_paths": True,
    }
    defaults.update(kwargs)
    return GpuSources(**defaults)


def read(testdata: Path, name: str) -> str:
    return (smi_dir(testdata) / name).read_text(encoding="utf-8")


# --- this machine, for real ----------------------------------------------------------------

has_driver = shutil.which("nvidia-smi") is not None or driver_evidence(DRIVER_PATHS) is not None


@pytest.mark.skipif(has_driver, reason="this machine has an NVIDIA driver")
def test_real_nvml_says_no_library_here() -> None:
    with pytest.raises(SourceAbsent, match="NVML Shared Library Not Found"):
        Nvml(load_pynvml()).read()


@pytest.mark.skipif(has_driver, reason="this machine has an NVIDIA driver")
def test_no_gpu_here_is_a_clean_fact() -> None:
    collector = Collector("gpu", "hardware", collect_gpu)
    outcome = run_collectors(CollectContext(), [collector], deadline_s=4.0)["gpu"]
    assert (outcome.status, outcome.warnings) == ("ok", [])
    section = outcome.section
    assert (section["gpu_count"], section["gpus"], section["gpu_model"]) == (0, [], None)
    assert section["gpu_source"] is None
    assert section["driver_version"] is None and section["cuda_version"] is None


def test_gpu_and_framework_are_registered_on_their_sections() -> None:
    registry = default_registry(plugins=False)
    assert registry.collectors["gpu"].section == "hardware"
    assert registry.collectors["framework"].section == "environment"


def test_gpu_keys_do_not_collide_with_the_system_collectors() -> None:
    registry = default_registry(plugins=False)
    system = registry.collectors["system"].fn(ctx())
    gpu = collect_gpu_from(ctx(), sources(driver_paths=()))
    assert not set(system) & set(gpu)


# --- NVML ----------------------------------------------------------------------------------


def test_nvml_replay_of_the_h200() -> None:
    fake = FakePynvml([H200_DEVICE])
    section = collect_gpu_from(ctx(), sources(load_nvml=lambda: fake))
    assert section["gpu_source"] == "nvml"
    assert (section["gpu_model"], section["gpu_count"]) == ("NVIDIA H200", 1)
    assert (section["driver_version"], section["cuda_driver_version"]) == ("590.48.01", "13.1")
    assert section["gpus"] == [
        {
            "index": 0,
            "name": "NVIDIA H200",
            "memory_gb": 140.4,
            "uuid": "GPU-00000000-0000-0000-0000-000000000000",
            "serial": "0000000000000",
            "pci_bus_id": "00000000:83:00.0",
            "vbios_version": "96.00.A5.00.03",
            "inforom_version": "G520.0280.02.02",
            "board_part_number": "695-2G520-0280-001",
            "pcie_gen_current": 5,
            "pcie_gen_max": 5,
            "pcie_width_current": 16,
            "pcie_width_max": 16,
            "compute_capability": "9.0",
            "mig_mode": "Disabled",
            "ecc_mode": "Enabled",
            "power_limit_w": 700.0,
        }
    ]
    assert fake.open == 0  # nvmlShutdown balanced nvmlInit


def test_nvml_and_csv_agree_on_the_h200(testdata: Path) -> None:
    nvml = collect_gpu_from(ctx(), sources(load_nvml=lambda: FakePynvml([H200_DEVICE])))
    text = read(testdata, H200)
    replay = Replay(
        {
            "--query-gpu": [(0, query_output(text))],
            "--version": [(0, capture_section(text, "capabilities :: version"))],
        }
    )
    csv = collect_gpu_from(ctx(), sources(runner=replay, nvidia_smi="nvidia-smi"))
    assert csv["gpu_source"] == "nvidia-smi-csv"
    assert csv["cuda_driver_version"] == nvml["cuda_driver_version"] == "13.1"
    # --query-gpu has no board part number; every other fact is the same.
    assert {**csv["gpus"][0], "board_part_number": "695-2G520-0280-001"} == nvml["gpus"][0]


def test_nvml_not_supported_is_none_and_not_a_warning() -> None:
    fake = FakePynvml(
        [RTX4080_DEVICE],
        driver="595.71.05",
        cuda=13020,
        missing=("nvmlSystemGetCudaDriverVersion_v2",),
    )
    fake.system["nvmlSystemGetCudaDriverVersion"] = 13020
    section = collect_gpu_from(ctx(), sources(load_nvml=lambda: fake))
    gpu = section["gpus"][0]
    assert (gpu["serial"], gpu["board_part_number"], gpu["mig_mode"], gpu["ecc_mode"]) == (
        None,
        None,
        None,
        None,
    )
    assert (gpu["name"], gpu["vbios_version"], gpu["compute_capability"]) == (
        "NVIDIA GeForce RTX 4080 SUPER",
        "95.03.44.00.B2",
        "8.9",
    )
    assert (gpu["pcie_gen_current"], gpu["pcie_gen_max"]) == (1, 4)
    assert section["cuda_driver_version"] == "13.2"  # from the pre-_v2 getter


def test_nvml_getter_errors_make_the_section_partial() -> None:
    device = {
        **H200_DEVICE,
        "nvmlDeviceGetPowerManagementLimit": pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION),
    }
    with pytest.raises(Partial) as caught:
        collect_gpu_from(ctx(), sources(load_nvml=lambda: FakePynvml([device])))
    assert "nvmlDeviceGetPowerManagementLimit" in caught.value.reason
    assert caught.value.section["gpus"][0]["power_limit_w"] is None
    assert caught.value.section["gpus"][0]["vbios_version"] == "96.00.A5.00.03"


def test_mixed_gpus_are_named_as_such() -> None:
    fake = FakePynvml([H200_DEVICE, RTX4080_DEVICE])
    section = collect_gpu_from(ctx(), sources(load_nvml=lambda: fake))
    assert section["gpu_model"] == "mixed: NVIDIA GeForce RTX 4080 SUPER, NVIDIA H200"
    assert section["gpu_count"] == 2


def test_undecodable_names_do_not_break_collection() -> None:
    device = {
        **H200_DEVICE,
        "nvmlDeviceGetName": UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid"),
    }
    with pytest.raises(Partial) as caught:
        collect_gpu_from(ctx(), sources(load_nvml=lambda: FakePynvml([device])))
    assert caught.value.section["gpus"][0]["name"] is None
    assert caught.value.section["gpus"][0]["vbios_version"] == "96.00.A5.00.03"


# --- falling back --------------------------------------------------------------------------


def test_nvml_absent_falls_to_csv(testdata: Path) -> None:
    fake = FakePynvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    text = read(testdata, H200)
    replay = Replay(
        {
            "--query-gpu": [(0, query_output(text))],
            "--version": [(0, capture_section(text, "capabilities :: version"))],
        }
    )
    section = collect_gpu_from(
        ctx(), sources(load_nvml=lambda: fake, runner=replay, nvidia_smi="nvidia-smi")
    )
    assert section["gpu_source"] == "nvidia-smi-csv"
    assert section["gpus"][0]["vbios_version"] == "96.00.A5.00.03"
    assert [call[1].split("=")[0] for call in replay.calls] == ["--query-gpu", "--version"]


def test_csv_failing_falls_to_xml(testdata: Path) -> None:
    replay = Replay({"--query-gpu": [(9, NO_DRIVER)], "-q": [(0, read(testdata, A5000))]})
    section = collect_gpu_from(ctx(), sources(runner=replay, nvidia_smi="nvidia-smi"))
    assert section["gpu_source"] == "nvidia-smi-xml"
    assert (section["driver_version"], section["cuda_driver_version"]) == ("590.44.01", "13.1")
    assert section["gpu_model"] == "NVIDIA RTX A5000"
    assert [g["board_part_number"] for g in section["gpus"]] == ["900-5G132-1700-000"] * 2


def test_every_source_failing_leaves_the_count_unknown() -> None:
    fake = FakePynvml([], init_error=pynvml.NVML_ERROR_NO_PERMISSION)
    replay = Replay({"--query-gpu": [(9, NO_DRIVER)], "-q": [(9, NO_DRIVER)]})
    with pytest.raises(Partial) as caught:
        collect_gpu_from(
            ctx(), sources(load_nvml=lambda: fake, runner=replay, nvidia_smi="nvidia-smi")
        )
    assert caught.value.section["gpu_count"] is None
    for source in ("nvml", "nvidia-smi-csv", "nvidia-smi-xml"):
        assert f"{source}:" in caught.value.reason


def test_a_driver_nobody_could_read_is_not_no_gpu(tmp_path: Path) -> None:
    node = tmp_path / "nvidiactl"
    node.touch()
    with pytest.raises(Partial) as caught:
        collect_gpu_from(ctx(), sources(driver_paths=(tmp_path / "dxg", node)))
    assert caught.value.section["gpu_count"] is None
    assert str(node) in caught.value.reason
    # ...unless the job may see no GPU anyway.
    section = collect_gpu_from(ctx({"CUDA_VISIBLE_DEVICES": ""}), sources(driver_paths=(node,)))
    assert section["gpu_count"] == 0


def test_without_a_driver_nvml_and_nvidia_smi_are_not_even_tried(tmp_path: Path) -> None:
    loaded: list[str] = []

    def load() -> Any:
        loaded.append("pynvml")
        return FakePynvml([H200_DEVICE])

    replay = Replay({})
    gone = (tmp_path / "nvidiactl", tmp_path / "nvidia")
    section = collect_gpu_from(
        ctx(), sources(driver_paths=gone, load_nvml=load, runner=replay, nvidia_smi="smi")
    )
    assert (section["gpu_count"], section["gpu_source"]) == (0, None)
    assert loaded == [] and replay.calls == []
    # Where those paths mean nothing (not Linux), the sources are asked all the same.
    section = collect_gpu_from(
        ctx(), sources(driver_paths=gone, load_nvml=load, trust_driver_paths=False)
    )
    assert (section["gpu_count"], section["gpu_source"]) == (1, "nvml")


def test_nvidia_smi_is_found_on_the_jobs_path_and_run_for_real(
    testdata: Path, tmp_path: Path
) -> None:
    """A real subprocess through process.run: an ``nvidia-smi`` that prints the recording."""
    text = read(testdata, H200)
    (tmp_path / "query.csv").write_text(query_output(text))
    (tmp_path / "version.txt").write_text(capture_section(text, "capabilities :: version"))
    script = tmp_path / "bin" / "nvidia-smi"
    script.parent.mkdir()
    script.write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        case "$1" in
          --query-gpu=*) exec cat {tmp_path / "query.csv"} ;;
          --version) exec cat {tmp_path / "version.txt"} ;;
        esac
        exit 2
        """)
    )
    script.chmod(0o755)
    section = collect_gpu_from(
        ctx({"PATH": str(script.parent)}), sources(runner=GpuSources().runner)
    )
    assert section["gpu_source"] == "nvidia-smi-csv"
    assert (section["gpu_model"], section["cuda_driver_version"]) == ("NVIDIA H200", "13.1")


# --- which GPUs the job sees ---------------------------------------------------------------

K80_UUIDS = [
    "GPU-c3b26f7a-8dcb-619c-fa1b-8029265a4db0",
    "GPU-b01b80eb-0f18-1df0-cf88-0725bd90f1e1",
    "GPU-30bc2701-3bc2-5f35-0ebd-9867a077e138",
    "GPU-3341aba2-f01d-2c1f-7dd4-e389779faec2",
]


@pytest.mark.parametrize(
    ("visible", "indexes"),
    [
        (None, [0, 1, 2, 3]),
        ("2,0", [2, 0]),
        ("3", [3]),
        (" 1 , 2 ", [1, 2]),
        ("0,7,1", [0]),  # CUDA ignores everything from the first invalid entry on
        ("", []),
        ("-1", []),
        ("GPU-30bc2701", [2]),  # any unique UUID prefix
        ("GPU-3", []),  # ambiguous prefix: invalid
        (f"{K80_UUIDS[3]},0", [3, 0]),
        ("gpu-c3b26f7a", []),  # the GPU- prefix is case-sensitive
        ("1,1", [1]),
        ("NoDevFiles", []),  # what Slurm sets for a job without GPUs
    ],
)
def test_cuda_visible_devices(testdata: Path, visible: str | None, indexes: list[int]) -> None:
    environ = {"PATH": ""} if visible is None else {"PATH": "", "CUDA_VISIBLE_DEVICES": visible}
    replay = Replay({"--query-gpu": [(9, NO_DRIVER)], "-q": [(0, read(testdata, K80))]})
    section = collect_gpu_from(ctx(environ), sources(runner=replay, nvidia_smi="nvidia-smi"))
    assert [g["index"] for g in section["gpus"]] == indexes
    assert [g["uuid"] for g in section["gpus"]] == [K80_UUIDS[i] for i in indexes]
    assert section["gpu_count"] == len(indexes)
    assert section["gpu_model"] == ("Tesla K80" if indexes else None)
    assert section["driver_version"] == "430.26"


def test_a_mig_device_names_its_gpu_through_nvidia_smi_list(testdata: Path) -> None:
    text = read(testdata, MIG)
    replay = Replay(
        {
            "--query-gpu": [(0, query_output(text))],
            "--version": [(0, capture_section(text, "capabilities :: version"))],
            "-L": [(0, capture_section(text, "capabilities :: list"))],
        }
    )
    environ = {"CUDA_VISIBLE_DEVICES": "MIG-00000001-0000-0000-0000-000000000001"}
    section = collect_gpu_from(ctx(environ), sources(runner=replay, nvidia_smi="nvidia-smi"))
    assert [(g["name"], g["mig_mode"]) for g in section["gpus"]] == [
        ("NVIDIA H100 80GB HBM3", "Enabled")
    ]
    unknown = {"CUDA_VISIBLE_DEVICES": "MIG-99999999"}
    section = collect_gpu_from(ctx(unknown), sources(runner=replay, nvidia_smi="nvidia-smi"))
    assert section["gpus"] == []


def test_a_mig_device_names_its_gpu_through_nvml() -> None:
    migs = {1: ["MIG-aaaa-1", "MIG-aaaa-2"]}
    fake = FakePynvml([RTX4080_DEVICE, H200_DEVICE], migs=migs)
    environ = {"CUDA_VISIBLE_DEVICES": "MIG-aaaa-2,MIG-aaaa-1"}
    section = collect_gpu_from(ctx(environ), sources(load_nvml=lambda: fake))
    assert [g["name"] for g in section["gpus"]] == ["NVIDIA H200"]
    # Without MIG entries the MIG devices are never enumerated.
    fake.calls.clear()
    collect_gpu_from(ctx({"CUDA_VISIBLE_DEVICES": "1"}), sources(load_nvml=lambda: fake))
    assert "nvmlDeviceGetMaxMigDeviceCount" not in fake.calls


def test_cuda_11_mig_form_names_the_parent_gpu(testdata: Path) -> None:
    replay = Replay(
        {"--query-gpu": [(9, NO_DRIVER)], "-q": [(0, read(testdata, K80))], "-L": [(0, "")]}
    )
    environ = {"CUDA_VISIBLE_DEVICES": f"MIG-{K80_UUIDS[1]}/1/0"}
    section = collect_gpu_from(ctx(environ), sources(runner=replay, nvidia_smi="nvidia-smi"))
    assert [g["uuid"] for g in section["gpus"]] == [K80_UUIDS[1]]


# --- torch as the last source, and library versions ----------------------------------------


def _initialised_torch(initialised: bool = True) -> Any:
    """torch after ``torch.cuda.init()`` on the H200 of the capture (no GPU here)."""
    props = SimpleNamespace(
        name="NVIDIA H200",
        major=9,
        minor=0,
        total_memory=143771 * 2**20,
        uuid="00000000-0000-0000-0000-000000000000",
        pci_domain_id=0,
        pci_bus_id=0x83,
        pci_device_id=0,
    )
    cuda = SimpleNamespace(
        is_initialized=lambda: initialised,
        device_count=lambda: 1,
        get_device_properties=lambda i: props,
        nccl=SimpleNamespace(version=lambda: (2, 27, 3)),
    )
    return SimpleNamespace(
        cuda=cuda,
        version=SimpleNamespace(cuda="12.8"),
        backends=SimpleNamespace(cudnn=SimpleNamespace(version=lambda: 91002)),
        _C=SimpleNamespace(_cuda_getDriverVersion=lambda: 13010),
    )


def test_torch_is_the_last_source_once_cuda_is_initialised() -> None:
    torch = _initialised_torch()
    section = collect_gpu_from(ctx(), sources(torch=lambda: torch))
    assert section["gpu_source"] == "torch"
    gpu = section["gpus"][0]
    assert (gpu["name"], gpu["memory_gb"], gpu["compute_capability"]) == (
        "NVIDIA H200",
        140.4,
        "9.0",
    )
    assert (gpu["uuid"], gpu["pci_bus_id"]) == (
        "GPU-00000000-0000-0000-0000-000000000000",
        "00000000:83:00.0",
    )
    assert tuple(gpu) == GPU_KEYS
    assert (section["cuda_version"], section["cuda_version_source"]) == ("12.8", "torch")
    assert (section["cudnn_version"], section["nccl_version"]) == ("9.10.2", "2.27.3")
    assert section["cuda_driver_version"] == "13.1"


def test_torch_with_cuda_not_initialised_is_not_initialised_by_us() -> None:
    torch = _initialised_torch(initialised=False)
    with pytest.raises(Partial) as caught:
        collect_gpu_from(ctx(), sources(torch=lambda: torch))
    assert "not initialised CUDA" in caught.value.reason
    assert caught.value.section["gpu_count"] is None
    assert caught.value.section["cuda_version"] == "12.8"  # versions need no CUDA init


def test_library_versions_without_a_loaded_torch() -> None:
    # This venv's torch is a CPU build (version.py says cuda = None) and no nvidia-* wheels
    # are installed, so the driver's CUDA version is all there is.
    assert library_versions(None, "13.1") == {
        "cuda_version": "13.1",
        "cuda_version_source": "driver",
        "cudnn_version": None,
        "cudnn_version_source": None,
        "nccl_version": None,
        "nccl_version_source": None,
    }
    assert library_versions(None, None)["cuda_version_source"] is None


def test_the_dna_keeps_the_kind_of_gpu_and_drops_the_device(testdata: Path) -> None:
    fake = FakePynvml([H200_DEVICE])
    hardware = collect_gpu_from(ctx(), sources(load_nvml=lambda: fake))
    gpu = projections({"hardware": hardware})["hardware"]["gpus"][0]
    for volatile in (
        "uuid",
        "serial",
        "pci_bus_id",
        "index",
        "pcie_gen_current",
        "pcie_width_current",
    ):
        assert volatile not in gpu
    assert gpu["vbios_version"] == "96.00.A5.00.03"
    assert (gpu["pcie_gen_max"], gpu["pcie_width_max"]) == (5, 16)


def test_collecting_does_not_import_torch() -> None:
    code = textwrap.dedent("""\
        import json, sys
        from expdna.collectors.context import CollectContext
        from expdna.collectors.gpu import collect_gpu
        section = collect_gpu(CollectContext())
        print(json.dumps({"torch": "torch" in sys.modules, "cuda": section["cuda_version"]}))
        """)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert done.stdout.strip() == '{"torch": false, "cuda": null}'
