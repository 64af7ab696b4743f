"""A stand-in ``nvidia-smi`` for the docs: prints what a real one printed on a real machine.

    python nvidia_smi_standin.py RECORDING [nvidia-smi arguments...]

RECORDING is one of the recorded outputs in tests/data/nvidia-smi:

- a capture bundle (``*_capture.txt``, nvidia_gpu_exporter): answers ``--query-gpu=...``
  (from the recorded CSV row, in the order asked, ``nounits`` applied), ``--version`` and
  ``-L``; it holds no XML, so ``-q -x`` fails;
- an XML log (``*.xml``): answers ``-q -x``; it holds no CSV, so ``--query-gpu`` fails;
- ``no-driver``: every call fails the way nvidia-smi does when the driver is not loaded.

It uses only the standard library, so it runs under any Python.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n"
)
UNIT = re.compile(r" (MiB|W|MHz|%|C|us)$")


def section(text: str, title: str) -> str:
    """The body of the ``# <title>`` section of a capture bundle."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"# {title}"))
    body = next(i for i in range(start, len(lines)) if lines[i].startswith("####")) + 1
    end = next((i for i in range(body, len(lines)) if lines[i].startswith("####")), len(lines))
    return "\n".join(lines[body:end]).strip("\n") + "\n"


def query(text: str, fields: list[str]) -> tuple[int, str]:
    rows = list(csv.reader(section(text, "idle :: query-gpu").splitlines(), skipinitialspace=True))
    header = [cell.split(" [", 1)[0].strip() for cell in rows[0]]
    for name in fields:
        if name not in header:
            return 2, f'Field "{name}" is not a valid field to query.\n\n'
    out = []
    for row in rows[1:]:
        if not any(cell.strip() for cell in row):
            continue
        values = dict(zip(header, row, strict=False))
        out.append(", ".join(UNIT.sub("", values[name].strip()) for name in fields))
    return 0, "\n".join(out) + "\n"


def answer(recording: str, args: list[str]) -> tuple[int, str]:
    if recording == "no-driver":
        return 9, NO_DRIVER
    text = Path(recording).read_text(encoding="utf-8")
    first = args[0] if args else ""
    if recording.endswith(".xml"):
        if args[:2] == ["-q", "-x"]:
            return 0, text
        return 2, f"(docs stand-in: this recording holds no answer to {first})\n"
    if first.startswith("--query-gpu="):
        return query(text, first.split("=", 1)[1].split(","))
    if first == "--version":
        return 0, section(text, "capabilities :: version")
    if first == "-L":
        return 0, section(text, "capabilities :: list")
    return 2, f"(docs stand-in: this recording holds no answer to {' '.join(args)})\n"


if __name__ == "__main__":
    code, output = answer(sys.argv[1], sys.argv[2:])
    sys.stdout.write(output)
    sys.exit(code)
