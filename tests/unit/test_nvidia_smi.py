"""nvidia-smi parsers against the real captures in tests/data/nvidia-smi.

The expected values in the tables were read out of the capture files by hand (and from
their ``-q`` text sections, which restate the same facts): they are the conformance table.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from expdna.collectors import nvidia_smi
from expdna.collectors.nvidia_smi import (
    GPU_KEYS,
    QUERY_FIELDS,
    SourceAbsent,
    SourceFailed,
    clean,
    parse_list,
    parse_query_csv,
    parse_version,
    parse_xml,
    report_from_csv,
)
from expdna.collectors.process import Completed, run
from tests.factories import NO_DRIVER, Replay, capture_section, query_output, smi_dir

# --- XML conformance table -----------------------------------------------------------------

#: per GPU: name, vbios, inforom, pci bus id, (gen cur, gen max, width cur, width max),
#: mig, ecc, power limit W, memory GiB, board part number
XML_GPUS: dict[str, tuple[str, str | None, int, list[tuple[Any, ...]]]] = {
    "pai_tesla-v100-sxm3-32gb_driver-410.104.xml": (
        "410.104",
        "10.0",
        10,
        [
            (
                "Tesla V100-SXM3-32GB",
                "88.00.6B.00.01",
                "G504.0200.00.03",
                "00000000:34:00.0",
                (3, 3, 16, 16),
                None,
                "Enabled",
                350.0,
                31.7,
                None,
            ),
        ],
    ),
    "pai_4x-tesla-k80_driver-430.26.xml": (
        "430.26",
        None,
        10,
        [
            (
                "Tesla K80",
                "80.21.1F.00.05",
                "2080.0200.00.04",
                "00001580:00:00.0",
                (3, 3, 16, 16),
                None,
                "Enabled",
                149.0,
                11.2,
                None,
            ),
            (
                "Tesla K80",
                "80.21.1F.00.05",
                "2080.0200.00.04",
                "00002DF7:00:00.0",
                (3, 3, 16, 16),
                None,
                "Enabled",
                149.0,
                11.2,
                None,
            ),
            (
                "Tesla K80",
                "80.21.1F.00.06",
                "2080.0200.00.04",
                "00004968:00:00.0",
                (1, 3, 16, 16),
                None,
                "Enabled",
                149.0,
                11.2,
                None,
            ),
            (
                "Tesla K80",
                "80.21.1F.00.06",
                "2080.0200.00.04",
                "0000F8D6:00:00.0",
                (1, 3, 16, 16),
                None,
                "Enabled",
                149.0,
                11.2,
                None,
            ),
        ],
    ),
    "telegraf_tesla-t4_driver-515.105.01.xml": (
        "515.105.01",
        "11.7",
        11,
        [
            (
                "Tesla T4",
                "90.04.84.00.06",
                "G183.0200.00.02",
                "00000000:00:1E.0",
                (3, 3, 8, 16),
                None,
                "Enabled",
                70.0,
                15.0,
                None,
            ),
        ],
    ),
    "telegraf_rtx-3090_driver-525.147.05.xml": (
        "525.147.05",
        "12.0",
        12,
        [
            (
                "NVIDIA GeForce RTX 3090",
                "94.02.71.40.72",
                "[REDACTED]",
                "00000000:00:10.0",
                (1, 4, 16, 16),
                None,
                None,
                200.0,
                24.0,
                None,
            ),
        ],
    ),
    "telegraf_a100-sxm4-80gb_mig_driver-535.54.03.xml": (
        "535.54.03",
        "12.2",
        12,
        [
            (
                "NVIDIA A100-SXM4-80GB",
                "92.00.36.00.02",
                "G506.0212.00.01",
                "00000000:01:00.0",
                (4, 4, 16, 16),
                "Enabled",
                "Enabled",
                500.0,
                80.0,
                "692-2G506-0212-002",
            ),
        ],
    ),
    "telegraf_2x-rtx-a5000_driver-590.44.01.xml": (
        "590.44.01",
        "13.1",
        13,
        [
            (
                "NVIDIA RTX A5000",
                "94.02.6D.00.0D",
                "G132.0500.00.01",
                "00000000:81:00.0",
                (1, 4, 16, 16),
                None,
                "Disabled",
                230.0,
                24.0,
                "900-5G132-1700-000",
            ),
            (
                "NVIDIA RTX A5000",
                "94.02.6D.00.0D",
                "G132.0500.00.01",
                "00000000:C1:00.0",
                (1, 4, 16, 16),
                None,
                "Disabled",
                230.0,
                24.0,
                "900-5G132-1700-000",
            ),
        ],
    ),
    "telegraf_rtx-pro-6000-blackwell-maxq_driver-590.44.01.xml": (
        "590.44.01",
        "13.1",
        13,
        [
            (
                "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
                "98.02.6A.00.03",
                "G153.0520.00.02",
                "00000000:61:00.0",
                (1, 4, 16, 16),
                None,
                "Disabled",
                300.0,
                95.6,
                "900-5G153-2200-000",
            ),
        ],
    ),
    "telegraf_rtx-3080_driver-595.58.03.xml": (
        "595.58.03",
        "13.2",
        13,
        [
            (
                "NVIDIA GeForce RTX 3080",
                "94.02.71.40.72",
                "G001.0000.03.03",
                "00000000:0C:00.0",
                (4, 4, 16, 16),
                None,
                None,
                320.0,
                10.0,
                None,
            ),
        ],
    ),
}


def _facts(gpu: Mapping[str, Any]) -> tuple[Any, ...]:
    return (
        gpu["name"],
        gpu["vbios_version"],
        gpu["inforom_version"],
        gpu["pci_bus_id"],
        (
            gpu["pcie_gen_current"],
            gpu["pcie_gen_max"],
            gpu["pcie_width_current"],
            gpu["pcie_width_max"],
        ),
        gpu["mig_mode"],
        gpu["ecc_mode"],
        gpu["power_limit_w"],
        gpu["memory_gb"],
        gpu["board_part_number"],
    )


def test_the_table_covers_every_xml_capture(testdata: Path) -> None:
    assert sorted(p.name for p in smi_dir(testdata).glob("*.xml")) == sorted(XML_GPUS)


@pytest.mark.parametrize("name", sorted(XML_GPUS))
def test_xml_capture(testdata: Path, name: str) -> None:
    driver, cuda, dtd, gpus = XML_GPUS[name]
    report = parse_xml((smi_dir(testdata) / name).read_text(encoding="utf-8"))
    assert report.source == "nvidia-smi-xml"
    assert (report.driver_version, report.cuda_driver_version, report.dtd_version) == (
        driver,
        cuda,
        dtd,
    )
    assert [_facts(g) for g in report.gpus] == gpus
    assert [g["index"] for g in report.gpus] == list(range(len(gpus)))
    for gpu in report.gpus:
        assert tuple(gpu) == GPU_KEYS
        assert gpu["uuid"].startswith("GPU-")
        assert gpu["compute_capability"] is None  # no DTD up to v13 carries it


def test_xml_mig_devices_memory_is_not_the_gpus(testdata: Path) -> None:
    # The first <fb_memory_usage> in document order belongs to a MIG device (19968 MiB).
    text = (smi_dir(testdata) / "telegraf_a100-sxm4-80gb_mig_driver-535.54.03.xml").read_text()
    assert text.index("<total>19968 MiB</total>") < text.index("<total>81920 MiB</total>")
    assert parse_xml(text).gpus[0]["memory_gb"] == 80.0


def test_xml_refuses_entity_declarations() -> None:
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE nvidia_smi_log [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        "<nvidia_smi_log><driver_version>&b;</driver_version></nvidia_smi_log>"
    )
    with pytest.raises(SourceFailed, match="entities"):
        parse_xml(bomb)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<html><body/></html>", "root is <html>"),
        ("<nvidia_smi_log><gpu>", "does not parse"),
        ("", "does not parse"),
    ],
)
def test_xml_rejects_what_is_not_an_nvidia_smi_log(text: str, message: str) -> None:
    with pytest.raises(SourceFailed, match=message):
        parse_xml(text)


def test_xml_without_doctype_or_gpus_parses() -> None:
    report = parse_xml(
        "<nvidia_smi_log><driver_version>418.43</driver_version>"
        "<cuda_version>10.1</cuda_version><attached_gpus>0</attached_gpus></nvidia_smi_log>"
    )
    assert (report.driver_version, report.cuda_driver_version, report.gpus) == (
        "418.43",
        "10.1",
        [],
    )
    assert report.dtd_version is None


# --- CSV conformance table -----------------------------------------------------------------

#: driver, CUDA (from the --version section), then per GPU: name, vbios, inforom, pci bus id,
#: (gen cur, gen max, width cur, width max), compute capability, mig, ecc, power W, memory GiB
CSV_GPUS: dict[str, tuple[str, str, tuple[Any, ...]]] = {
    "gpuexporter_h100-80gb-hbm3_driver-590.48.01_capture.txt": (
        "590.48.01",
        "13.1",
        (
            "NVIDIA H100 80GB HBM3",
            "96.00.A5.00.01",
            "G520.0200.00.05",
            "00000000:00:09.0",
            (5, 5, 16, 16),
            "9.0",
            "Disabled",
            "Enabled",
            700.0,
            79.6,
        ),
    ),
    "gpuexporter_h100-80gb-hbm3_mig_driver-590.48.01_capture.txt": (
        "590.48.01",
        "13.1",
        (
            "NVIDIA H100 80GB HBM3",
            "96.00.A5.00.01",
            "G520.0200.00.05",
            "00000000:00:09.0",
            (5, 5, 16, 16),
            "9.0",
            "Enabled",
            "Enabled",
            700.0,
            79.6,
        ),
    ),
    "gpuexporter_h200_driver-590.48.01_capture.txt": (
        "590.48.01",
        "13.1",
        (
            "NVIDIA H200",
            "96.00.A5.00.03",
            "G520.0280.02.02",
            "00000000:83:00.0",
            (5, 5, 16, 16),
            "9.0",
            "Disabled",
            "Enabled",
            700.0,
            140.4,
        ),
    ),
    "gpuexporter_rtx-4080-super_driver-595.71.05_capture.txt": (
        "595.71.05",
        "13.2",
        (
            "NVIDIA GeForce RTX 4080 SUPER",
            "95.03.44.00.B2",
            "G002.0000.00.03",
            "00000000:01:00.0",
            (1, 4, 16, 16),
            "8.9",
            None,
            None,
            320.0,
            16.0,
        ),
    ),
    # Windows prints this VBIOS as 90.04.7a.40.73; it is normalised to Linux's upper case.
    "gpuexporter_windows_rtx-2080-super_driver-591.86_capture.txt": (
        "591.86",
        "13.1",
        (
            "NVIDIA GeForce RTX 2080 SUPER",
            "90.04.7A.40.73",
            "G001.0000.02.04",
            "00000000:0C:00.0",
            (3, 3, 16, 16),
            "7.5",
            None,
            None,
            250.0,
            8.0,
        ),
    ),
}


def _csv_facts(gpu: Mapping[str, Any]) -> tuple[Any, ...]:
    return (
        gpu["name"],
        gpu["vbios_version"],
        gpu["inforom_version"],
        gpu["pci_bus_id"],
        (
            gpu["pcie_gen_current"],
            gpu["pcie_gen_max"],
            gpu["pcie_width_current"],
            gpu["pcie_width_max"],
        ),
        gpu["compute_capability"],
        gpu["mig_mode"],
        gpu["ecc_mode"],
        gpu["power_limit_w"],
        gpu["memory_gb"],
    )


def test_the_table_covers_every_csv_capture(testdata: Path) -> None:
    assert sorted(p.name for p in smi_dir(testdata).glob("*_capture.txt")) == sorted(CSV_GPUS)


@pytest.mark.parametrize("name", sorted(CSV_GPUS))
def test_csv_capture_with_header_and_units(testdata: Path, name: str) -> None:
    driver, cuda, gpu = CSV_GPUS[name]
    text = (smi_dir(testdata) / name).read_text(encoding="utf-8")
    rows = parse_query_csv(capture_section(text, "idle :: query-gpu"))
    assert len(rows) == 1 and len(rows[0]) > 200  # the exporter's ~200-212 columns
    report = report_from_csv(rows)
    assert report.driver_version == driver
    assert [_csv_facts(g) for g in report.gpus] == [gpu]
    assert report.gpus[0]["index"] == 0
    assert report.gpus[0]["board_part_number"] is None  # --query-gpu has no such field
    assert parse_version(capture_section(text, "capabilities :: version")) == cuda


@pytest.mark.parametrize("name", sorted(CSV_GPUS))
def test_csv_under_load_differs_only_in_the_current_link(testdata: Path, name: str) -> None:
    text = (smi_dir(testdata) / name).read_text(encoding="utf-8")
    idle, load = (
        report_from_csv(parse_query_csv(capture_section(text, f"{phase} :: query-gpu"))).gpus[0]
        for phase in ("idle", "load")
    )
    assert {k: v for k, v in load.items() if k != "pcie_gen_current"} == {
        k: v for k, v in idle.items() if k != "pcie_gen_current"
    }


def test_an_idle_consumer_card_drops_its_link_generation(testdata: Path) -> None:
    # Why pcie_gen_current stays out of the DNA: the RTX 4080 idles at gen 1, loads at gen 4.
    text = (
        smi_dir(testdata) / "gpuexporter_rtx-4080-super_driver-595.71.05_capture.txt"
    ).read_text(encoding="utf-8")
    gens = [
        report_from_csv(parse_query_csv(capture_section(text, f"{phase} :: query-gpu"))).gpus[0][
            "pcie_gen_current"
        ]
        for phase in ("idle", "load")
    ]
    assert gens == [1, 4]


@pytest.mark.parametrize("name", sorted(CSV_GPUS))
def test_csv_noheader_nounits_form_gives_the_same_gpus(testdata: Path, name: str) -> None:
    text = (smi_dir(testdata) / name).read_text(encoding="utf-8")
    with_header = report_from_csv(parse_query_csv(capture_section(text, "idle :: query-gpu")))
    bare = report_from_csv(parse_query_csv(query_output(text), QUERY_FIELDS))
    assert bare.gpus == with_header.gpus
    assert bare.driver_version == CSV_GPUS[name][0]


def test_csv_row_of_the_wrong_width_is_an_error() -> None:
    with pytest.raises(SourceFailed, match="2 values for 3 fields"):
        parse_query_csv("0, NVIDIA H200\n", ["index", "name", "uuid"])


CSV_NAMES = {
    "h200": "gpuexporter_h200_driver-590.48.01_capture.txt",
    "mig": "gpuexporter_h100-80gb-hbm3_mig_driver-590.48.01_capture.txt",
}


def test_mig_devices_map_to_their_gpu(testdata: Path) -> None:
    text = (smi_dir(testdata) / CSV_NAMES["mig"]).read_text(encoding="utf-8")
    assert parse_list(capture_section(text, "capabilities :: list")) == {
        "MIG-00000000-0000-0000-0000-000000000000": 0,
        "MIG-00000001-0000-0000-0000-000000000001": 0,
        "MIG-00000002-0000-0000-0000-000000000002": 0,
        "MIG-00000003-0000-0000-0000-000000000003": 0,
    }
    h200 = (smi_dir(testdata) / CSV_NAMES["h200"]).read_text(encoding="utf-8")
    assert parse_list(capture_section(h200, "capabilities :: list")) == {}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("N/A", None),
        ("[N/A]", None),
        ("[Not Supported]", None),
        ("Not Found", None),
        ("[Requested functionality has been deprecated]", None),
        ("  ", None),
        (None, None),
        (b"NVIDIA H200", "NVIDIA H200"),
        (" 96.00.A5.00.03 ", "96.00.A5.00.03"),
        ("[REDACTED]", "[REDACTED]"),
        (b"\xff\xfeGPU", "\ufffd\ufffdGPU"),
    ],
)
def test_not_a_value_spellings(raw: object, expected: str | None) -> None:
    assert clean(raw) == expected


# --- the runs ------------------------------------------------------------------------------


def test_query_csv_drops_each_field_an_old_driver_rejects(testdata: Path) -> None:
    text = (smi_dir(testdata) / CSV_NAMES["h200"]).read_text(encoding="utf-8")
    old = [f for f in QUERY_FIELDS if f not in ("compute_cap", "mig.mode.current")]
    replay = Replay(
        {
            "--query-gpu": [
                (2, 'Field "compute_cap" is not a valid field to query.\n\n'),
                (2, 'Field "mig.mode.current" is not a valid field to query.\n\n'),
                (0, query_output(text, old)),
            ]
        }
    )
    report = nvidia_smi.query_csv("nvidia-smi", runner=replay, timeout_s=5)
    assert len(replay.calls) == 3
    asked = [call[1].removeprefix("--query-gpu=").split(",") for call in replay.calls]
    assert "compute_cap" in asked[0] and "compute_cap" not in asked[1]
    assert asked[2] == old
    assert all(call[2] == "--format=csv,noheader,nounits" for call in replay.calls)
    gpu = report.gpus[0]
    assert (gpu["vbios_version"], gpu["compute_capability"], gpu["mig_mode"]) == (
        "96.00.A5.00.03",
        None,
        None,
    )


def test_query_csv_gives_up_when_a_base_field_is_rejected() -> None:
    replay = Replay({"--query-gpu": [(2, 'Field "uuid" is not a valid field to query.\n')]})
    with pytest.raises(SourceFailed, match="'uuid'"):
        nvidia_smi.query_csv("nvidia-smi", runner=replay, timeout_s=5)
    assert len(replay.calls) == 1


def test_query_csv_reports_a_driver_that_does_not_answer() -> None:
    replay = Replay({"--query-gpu": [(9, NO_DRIVER)]})
    with pytest.raises(SourceFailed, match="exited 9: NVIDIA-SMI has failed"):
        nvidia_smi.query_csv("nvidia-smi", runner=replay, timeout_s=5)


def test_query_xml_replays_a_capture(testdata: Path) -> None:
    name = "telegraf_2x-rtx-a5000_driver-590.44.01.xml"
    replay = Replay({"-q": [(0, (smi_dir(testdata) / name).read_text(encoding="utf-8"))]})
    report = nvidia_smi.query_xml("nvidia-smi", runner=replay, timeout_s=5)
    assert replay.calls == [["nvidia-smi", "-q", "-x"]]
    assert [g["pci_bus_id"] for g in report.gpus] == ["00000000:81:00.0", "00000000:C1:00.0"]


def test_a_missing_program_is_absent_not_failed(tmp_path: Path) -> None:
    with pytest.raises(SourceAbsent):
        nvidia_smi.query_csv(str(tmp_path / "nvidia-smi"), runner=run, timeout_s=5)
    assert (
        nvidia_smi.query_cuda_version(str(tmp_path / "nvidia-smi"), runner=run, timeout_s=5) is None
    )


def test_a_hanging_program_times_out() -> None:
    def hang(argv: Sequence[str], **_: Any) -> Completed:
        raise subprocess.TimeoutExpired(list(argv), 0.1)

    with pytest.raises(SourceFailed, match="timed out"):
        nvidia_smi.query_xml("nvidia-smi", runner=hang, timeout_s=0.1)


def test_version_without_cuda_line_is_none() -> None:
    assert parse_version("NVIDIA-SMI version  : 470.82.01\n") is None
    assert parse_version("") is None
