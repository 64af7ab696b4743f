"""The JSON Schema of manifest 1.x, generated from the models.

``python -m expdna.manifest.schema`` rewrites docs/schema/experiment-manifest-v1.schema.json;
a test fails when the checked-in file is stale.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from expdna.manifest.model import Manifest

SCHEMA_ID = "https://expdna.dev/schema/experiment-manifest-v1.schema.json"


def json_schema() -> dict[str, Any]:
    schema = Manifest.model_json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "title": "expdna experiment manifest, schema 1.x",
    }


def render() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=False, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
