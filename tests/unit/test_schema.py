"""The checked-in JSON Schema is generated from the models and must not go stale."""

from __future__ import annotations

import json
from pathlib import Path

from expdna.manifest.schema import render

SCHEMA = Path(__file__).parents[2] / "docs" / "schema" / "experiment-manifest-v1.schema.json"


def test_checked_in_schema_matches_the_models() -> None:
    assert SCHEMA.read_text(encoding="utf-8") == render(), (
        "docs/schema is stale: run `python -m expdna.manifest.schema > "
        "docs/schema/experiment-manifest-v1.schema.json`"
    )


def test_schema_names_the_fields_others_rely_on() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    defs = schema["$defs"]
    assert {
        "schema_version",
        "run_id",
        "generated_at",
        "command",
        "code",
        "config",
        "dna",
        "collection",
    } <= set(schema["properties"])
    assert set(schema["required"]) == {"run_id", "generated_at"}
    assert {"argv", "cwd"} <= set(defs["Command"]["properties"])
    assert {"commit", "branch", "dirty", "patch"} <= set(defs["Repo"]["properties"])
    assert {"name", "memory_gb", "vbios_version"} <= set(defs["Gpu"]["properties"])
    assert {"gpu_model", "driver_version", "cuda_version", "nccl_version"} <= set(
        defs["Hardware"]["properties"]
    )
    assert {"version", "value", "sections"} <= set(defs["Dna"]["properties"])
    assert defs["Hardware"].get("additionalProperties") is True  # unknown fields allowed
