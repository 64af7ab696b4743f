"""``nvidia-smi`` as a GPU source: the runs, and tolerant parsers of what they print.

Three outputs are read, each structured, never the human table:

- ``--query-gpu=<fields> --format=csv,noheader,nounits``: one row per GPU. Old drivers
  reject fields they do not know (``Field "compute_cap" is not a valid field to query.``);
  the run drops the named field and asks again.
- ``-q -x``: the XML log, DTD v10 to v13 (drivers 410 to 595). Elements moved between
  generations (power limit, PCIe generations), so every value is looked up along a list
  of paths and ``N/A`` spellings become ``None``.
- ``--version`` (for the CUDA driver version, which ``--query-gpu`` does not report) and
  ``-L`` (to map a ``MIG-`` UUID in ``CUDA_VISIBLE_DEVICES`` to its GPU).

Every parser returns the same plain shape, :class:`GpuReport`, that the NVML adapter returns.
"""

from __future__ import annotations

import csv
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

from expdna.collectors.process import Runner

#: The keys of one GPU in ``hardware.gpus``, in the order they are written.
GPU_KEYS: tuple[str, ...] = (
    "index",
    "name",
    "memory_gb",
    "uuid",
    "serial",
    "pci_bus_id",
    "vbios_version",
    "inforom_version",
    "board_part_number",
    "pcie_gen_current",
    "pcie_gen_max",
    "pcie_width_current",
    "pcie_width_max",
    "compute_capability",
    "mig_mode",
    "ecc_mode",
    "power_limit_w",
)

# What the driver prints for "no value": bare in the XML, bracketed in the CSV.
_NOT_A_VALUE = frozenset(
    {
        "",
        "n/a",
        "not found",
        "not supported",
        "unknown error",
        "insufficient permissions",
        "requested functionality has been deprecated",
        "not available",
    }
)
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_INVALID_FIELD = re.compile(r'Field "([^"]+)" is not a valid field to query')
_DTD = re.compile(r"nvsmi_device_v(\d+)\.dtd")


@dataclass
class GpuReport:
    """What one GPU source saw: the driver and every GPU it lists, in the driver's order."""

    source: str
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    gpus: list[dict[str, Any]] = field(default_factory=list)
    #: ``MIG-`` UUID -> index of the GPU it lives on (filled only when asked for).
    mig_parents: dict[str, int] = field(default_factory=dict)
    #: The XML's schema version (``nvsmi_device_v12.dtd`` -> 12); None elsewhere.
    dtd_version: int | None = None


class SourceAbsent(Exception):
    """This GPU source does not exist here (no library, no program, no driver)."""


class SourceFailed(Exception):
    """This GPU source exists but did not answer usefully."""


# --- value normalisers (shared with the NVML adapter) -------------------------------------


def clean(value: object) -> str | None:
    """``value`` as a stripped str, or None for every "no value" spelling; bytes decoded."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    text = str(value).strip()
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    return None if bare.strip().lower() in _NOT_A_VALUE else text


def number(value: object) -> float | None:
    """The leading number of ``value`` ("500.00 W" -> 500.0, "16x" -> 16.0), or None."""
    text = clean(value)
    if text is None:
        return None
    found = _NUMBER.match(text)
    return float(found.group()) if found else None


def integer(value: object) -> int | None:
    found = number(value)
    return None if found is None else int(found)


def gib_from_mib(value: object) -> float | None:
    mib = number(value)
    return None if mib is None else round(mib / 1024, 1)


def vbios(value: object) -> str | None:
    # Windows prints the same firmware in lower case ("90.04.7a.40.73"), Linux in upper.
    text = clean(value)
    return None if text is None else text.upper()


def cuda_from_int(value: int | None) -> str | None:
    """NVML/CUDA's integer version (12040) as "12.4"."""
    if not value:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def empty_gpu(index: int) -> dict[str, Any]:
    gpu: dict[str, Any] = dict.fromkeys(GPU_KEYS)
    gpu["index"] = index
    return gpu


# --- --query-gpu CSV ----------------------------------------------------------------------

#: Our key -> (``--query-gpu`` field, converter). ``index`` first: it names the row.
CSV_FIELDS: dict[str, tuple[str, Callable[[object], Any]]] = {
    "index": ("index", integer),
    "name": ("name", clean),
    "memory_gb": ("memory.total", gib_from_mib),
    "uuid": ("uuid", clean),
    "serial": ("serial", clean),
    "pci_bus_id": ("pci.bus_id", clean),
    "vbios_version": ("vbios_version", vbios),
    "inforom_version": ("inforom.img", clean),
    "pcie_gen_current": ("pcie.link.gen.current", integer),
    "pcie_gen_max": ("pcie.link.gen.max", integer),
    "pcie_width_current": ("pcie.link.width.current", integer),
    "pcie_width_max": ("pcie.link.width.max", integer),
    "compute_capability": ("compute_cap", clean),
    "mig_mode": ("mig.mode.current", clean),
    "ecc_mode": ("ecc.mode.current", clean),
    "power_limit_w": ("power.limit", number),
}
#: Every field asked for, ``driver_version`` included (it is per row in the CSV).
QUERY_FIELDS: tuple[str, ...] = ("driver_version", *(query for query, _ in CSV_FIELDS.values()))
#: Fields every driver since the 2010s knows; the query is never narrowed below these.
BASE_FIELDS: frozenset[str] = frozenset(
    {
        "driver_version",
        "index",
        "name",
        "memory.total",
        "uuid",
        "serial",
        "pci.bus_id",
        "vbios_version",
    }
)


def _header_name(cell: str) -> str:
    # "memory.total [MiB]" -> "memory.total": the header carries units without nounits.
    return cell.split(" [", 1)[0].strip()


def parse_query_csv(text: str, fields: Sequence[str] | None = None) -> list[dict[str, str | None]]:
    """Rows of a ``--query-gpu`` CSV as {field: raw value}.

    ``fields`` are the names asked for (the ``noheader`` form). Without them, or when the
    first line is a header anyway, the header names the columns (units dropped).
    """
    rows = list(csv.reader(text.splitlines(), skipinitialspace=True))
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        return []
    header = [_header_name(cell) for cell in rows[0]]
    if fields is None or {"index", "uuid"} <= set(header):
        names, body = header, rows[1:]
    else:
        names, body = list(fields), rows
    parsed = []
    for row in body:
        if len(row) != len(names):
            raise SourceFailed(f"nvidia-smi CSV row has {len(row)} values for {len(names)} fields")
        parsed.append({name: clean(value) for name, value in zip(names, row, strict=True)})
    return parsed


def report_from_csv(rows: Iterable[Mapping[str, str | None]]) -> GpuReport:
    report = GpuReport(source="nvidia-smi-csv")
    for position, row in enumerate(rows):
        gpu = empty_gpu(position)
        for key, (query, convert) in CSV_FIELDS.items():
            if query in row:
                gpu[key] = convert(row[query])
        if gpu["index"] is None:
            gpu["index"] = position
        report.gpus.append(gpu)
        report.driver_version = report.driver_version or clean(row.get("driver_version"))
    report.gpus.sort(key=lambda g: g["index"])
    return report


def invalid_field(output: str) -> str | None:
    """The field an old driver rejected, from its error message."""
    found = _INVALID_FIELD.search(output)
    return found.group(1) if found else None


# --- -q -x XML ----------------------------------------------------------------------------


def _text(element: Element, *paths: str) -> str | None:
    """The first path that holds a value; paths are relative, so MIG devices' own
    ``fb_memory_usage`` (deeper in the tree) never answers for the GPU."""
    for path in paths:
        found = element.find(path)
        if found is not None:
            value = clean(found.text)
            if value is not None:
                return value
    return None


def _compute_capability(gpu: Element) -> str | None:
    major = _text(gpu, "compute_cap_major", "cuda_compute_capability/major")
    minor = _text(gpu, "compute_cap_minor", "cuda_compute_capability/minor")
    return f"{major}.{minor}" if major is not None and minor is not None else None


def _gpu_from_xml(position: int, gpu: Element) -> dict[str, Any]:
    link = "pci/pci_gpu_link_info/"
    found = empty_gpu(position)
    found.update(
        name=_text(gpu, "product_name"),
        memory_gb=gib_from_mib(_text(gpu, "fb_memory_usage/total")),
        uuid=_text(gpu, "uuid"),
        serial=_text(gpu, "serial"),
        pci_bus_id=_text(gpu, "pci/pci_bus_id") or clean(gpu.get("id")),
        vbios_version=vbios(_text(gpu, "vbios_version")),
        inforom_version=_text(gpu, "inforom_version/img_version"),
        board_part_number=_text(gpu, "board_part_number"),
        pcie_gen_current=integer(_text(gpu, link + "pcie_gen/current_link_gen")),
        pcie_gen_max=integer(_text(gpu, link + "pcie_gen/max_link_gen")),
        pcie_width_current=integer(_text(gpu, link + "link_widths/current_link_width")),
        pcie_width_max=integer(_text(gpu, link + "link_widths/max_link_width")),
        compute_capability=_compute_capability(gpu),
        mig_mode=_text(gpu, "mig_mode/current_mig"),
        ecc_mode=_text(gpu, "ecc_mode/current_ecc"),
        # <= 525: power_readings/power_limit; 535+: gpu_power_readings/current_power_limit.
        power_limit_w=number(
            _text(
                gpu,
                "power_readings/power_limit",
                "power_readings/current_power_limit",
                "gpu_power_readings/current_power_limit",
                "gpu_power_readings/power_limit",
            )
        ),
    )
    return found


def parse_xml(text: str) -> GpuReport:
    """The ``nvidia-smi -q -x`` log. Entity declarations are refused (no entity expansion);
    the DOCTYPE's external DTD is never fetched by the parser."""
    # Imported here: only the XML fallback needs it, and `import expdna` stays light.
    import xml.etree.ElementTree as ET

    if "<!ENTITY" in text:
        raise SourceFailed("nvidia-smi XML declares entities; refused")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise SourceFailed(f"nvidia-smi XML does not parse: {exc}") from None
    if root.tag != "nvidia_smi_log":
        raise SourceFailed(f"nvidia-smi XML root is <{root.tag}>, not <nvidia_smi_log>")
    dtd = _DTD.search(text[:4096])
    report = GpuReport(
        source="nvidia-smi-xml",
        driver_version=_text(root, "driver_version"),
        cuda_driver_version=_text(root, "cuda_version"),
        dtd_version=int(dtd.group(1)) if dtd else None,
    )
    report.gpus = [_gpu_from_xml(i, gpu) for i, gpu in enumerate(root.findall("gpu"))]
    return report


# --- --version and -L ---------------------------------------------------------------------

_CUDA_LINE = re.compile(r"^CUDA Version\s*:\s*(\S+)", re.MULTILINE)
_GPU_LINE = re.compile(r"^GPU (\d+): .*\(UUID: (GPU-[^)]+)\)")
_MIG_LINE = re.compile(r"^\s+MIG .*\(UUID: (MIG-[^)]+)\)")


def parse_version(text: str) -> str | None:
    """The CUDA driver version from ``nvidia-smi --version`` (drivers 525+)."""
    found = _CUDA_LINE.search(text)
    return clean(found.group(1)) if found else None


def parse_list(text: str) -> dict[str, int]:
    """``nvidia-smi -L``: each MIG device's UUID -> the index of the GPU above it."""
    parents: dict[str, int] = {}
    current: int | None = None
    for line in text.splitlines():
        gpu = _GPU_LINE.match(line)
        if gpu:
            current = int(gpu.group(1))
            continue
        mig = _MIG_LINE.match(line)
        if mig and current is not None:
            parents[mig.group(1)] = current
    return parents


# --- the runs -----------------------------------------------------------------------------


def _run(runner: Runner, argv: Sequence[str], timeout_s: float) -> tuple[int, str, str]:
    try:
        done = runner(argv, timeout_s=timeout_s)
    except FileNotFoundError:
        raise SourceAbsent(f"{argv[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise SourceFailed(f"{' '.join(argv[:2])} timed out after {timeout_s:g} s") from None
    except OSError as exc:
        raise SourceFailed(f"{argv[0]}: {exc}") from None
    return (
        done.returncode,
        done.stdout.decode("utf-8", errors="replace"),
        done.stderr.decode("utf-8", errors="replace"),
    )


def _failure(argv: Sequence[str], code: int, output: str) -> SourceFailed:
    # nvidia-smi prints its reason ("couldn't communicate with the NVIDIA driver") on stdout.
    first = next((line.strip() for line in output.splitlines() if line.strip()), "no output")
    return SourceFailed(f"{' '.join(argv[:2])} exited {code}: {first}")


def query_csv(exe: str, *, runner: Runner, timeout_s: float) -> GpuReport:
    """Run ``--query-gpu``; on an old driver drop each field it rejects and ask again."""
    fields = list(QUERY_FIELDS)
    while True:
        argv = [exe, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
        code, output, errors = _run(runner, argv, timeout_s)
        rejected = invalid_field(output + errors)
        if rejected is None:
            break
        if rejected not in fields or rejected in BASE_FIELDS:
            raise SourceFailed(f"nvidia-smi rejects the query field {rejected!r}")
        fields.remove(rejected)
    if code != 0:
        raise _failure(argv, code, output + errors)
    return report_from_csv(parse_query_csv(output, fields))


def query_xml(exe: str, *, runner: Runner, timeout_s: float) -> GpuReport:
    argv = [exe, "-q", "-x"]
    code, output, errors = _run(runner, argv, timeout_s)
    if code != 0:
        raise _failure(argv, code, output + errors)
    return parse_xml(output)


def query_cuda_version(exe: str, *, runner: Runner, timeout_s: float) -> str | None:
    """The CUDA driver version, or None where this nvidia-smi has no ``--version``."""
    try:
        code, output, _ = _run(runner, [exe, "--version"], timeout_s)
    except (SourceAbsent, SourceFailed):
        return None
    return parse_version(output) if code == 0 else None


def query_mig_parents(exe: str, *, runner: Runner, timeout_s: float) -> dict[str, int]:
    try:
        code, output, _ = _run(runner, [exe, "-L"], timeout_s)
    except (SourceAbsent, SourceFailed):
        return {}
    return parse_list(output) if code == 0 else {}
