"""The OpenAPI 3.0 document of ``/api``: written by hand, next to the shapes it describes
(``RunSummary.to_dict`` and friends), and checked against the live API by schemathesis."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from expdna import __version__

_STR = {"type": "string"}
_OPT = {"type": "string", "nullable": True}
_SUMMARY_FIELDS = (
    "commit",
    "algorithm",
    "gpu_model",
    "driver_version",
    "cuda_version",
    "nccl_version",
    "python_version",
    "family",
)

SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {"error": _STR},
    },
    "RunSummary": {
        "type": "object",
        "required": ["run_id", "dna", "generated_at", "recorded_at", "unknown"],
        "properties": {
            "run_id": _STR,
            "dna": _STR,
            "generated_at": _STR,
            "recorded_at": _STR,
            **{name: _OPT for name in _SUMMARY_FIELDS},
            "unknown": {"type": "array", "items": _STR},
            "state": {
                **_OPT,
                "description": "status.state: running, completed, failed, interrupted; "
                "null for a run recorded before status existed",
            },
            "unfinished": {
                "type": "boolean",
                "description": "still running long after its start ($EXPDNA_UNFINISHED_AFTER)",
            },
        },
    },
    "RunRecord": {
        "allOf": [
            {"$ref": "#/components/schemas/RunSummary"},
            {
                "type": "object",
                "required": ["dna_version", "schema_version", "sections", "manifest_digest"],
                "properties": {
                    "dna_version": {"type": "integer"},
                    "schema_version": _STR,
                    "sections": {"type": "object", "additionalProperties": _STR},
                    "manifest_digest": _STR,
                },
            },
        ]
    },
    "Diff": {
        "type": "object",
        "required": ["equal", "dna", "sections", "changes"],
        "properties": {
            "equal": {"type": "boolean"},
            "dna": {"type": "array", "items": _STR, "minItems": 2, "maxItems": 2},
            "sections": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "required": ["equal", "a", "b"],
                    "properties": {"equal": {"type": "boolean"}, "a": _STR, "b": _STR},
                },
            },
            "changes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["path", "severity", "old", "new", "section", "in_dna"],
                    "properties": {
                        "path": _STR,
                        "severity": {"type": "string", "enum": ["CRITICAL", "WARN", "INFO"]},
                        "old": {"nullable": True},
                        "new": {"nullable": True},
                        "section": _STR,
                        "in_dna": {"type": "boolean"},
                    },
                },
            },
        },
    },
    "Stability": {
        "type": "object",
        "required": ["family", "incomplete", "dna", "runs", "ignored", "dnas", "metrics"],
        "properties": {
            "family": _OPT,
            "incomplete": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": _STR},
            },
            "dna": _STR,
            "runs": {"type": "array", "items": _STR},
            "ignored": {"type": "array", "items": _STR},
            "dnas": {"type": "array", "items": _STR},
            "metrics": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "required": ["n", "mean", "std", "min", "max", "cv"],
                    "properties": {
                        "n": {"type": "integer"},
                        "mean": {"type": "number"},
                        "std": {"type": "number", "nullable": True},
                        "min": {"type": "number"},
                        "max": {"type": "number"},
                        "cv": {"type": "number", "nullable": True},
                    },
                },
            },
        },
    },
    "LineageEdge": {
        "type": "object",
        "required": [
            "run_id",
            "dna",
            "generated_at",
            "direction",
            "depth",
            "relation",
            "parent",
            "child",
            "source",
        ],
        "properties": {
            "run_id": _STR,
            "dna": _OPT,
            "generated_at": _OPT,
            "direction": {"type": "string", "enum": ["ancestor", "descendant"]},
            "depth": {"type": "integer"},
            "relation": _STR,
            "parent": _STR,
            "child": _STR,
            "source": _STR,
        },
    },
    "Pin": {
        "type": "object",
        "required": ["run_id", "dna", "name", "matches", "digest", "path", "size", "pinned_at"],
        "properties": {
            "run_id": _STR,
            "dna": _STR,
            "name": _OPT,
            "matches": {"type": "boolean", "nullable": True},
            "digest": _STR,
            "path": _OPT,
            "size": {"type": "integer", "nullable": True},
            "pinned_at": _STR,
            "generated_at": _OPT,
        },
    },
    "Fleet": {
        "type": "object",
        "additionalProperties": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["value", "runs"],
                "properties": {"value": _STR, "runs": {"type": "integer"}},
            },
        },
    },
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _param(name: str, where: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    param: dict[str, Any] = {
        "name": name,
        "in": where,
        "schema": schema,
        "description": description,
    }
    if where == "path":
        param["required"] = True
    return param


#: What the CLI's parsers accept, as patterns, so a request the document allows is answered.
#: A run id (expdna.manifest.runid.RUN_ID), less the hex too short or too long for a prefix.
RUN_REF = r"^(?![0-9a-fA-F]{1,5}$)(?![0-9a-fA-F]{65,}$)[A-Za-z0-9][A-Za-z0-9._:+-]{0,127}$"
DNA_PREFIX = r"^[0-9a-fA-F]{6,64}$"
#: PATH=VALUE with a dotted path (expdna.store.queries.parse_where).
WHERE = r"^\s*[^=.\s][^=.]*((\.[^=.]+)*\.[^=.]*[^=.\s][^=.]*)?=[\s\S]*$"
#: A pin name, or ``blake3:`` and 64 lowercase hex.
PIN = r"^(?!blake3:)[\s\S]+$|^blake3:[0-9a-f]{64}$"

_ERROR_400 = _json(_ref("Error"), "bad input: the CLI's message (its exit code 2)")
_ERROR_404 = _json(_ref("Error"), "not found: the CLI's message (its exit code 1)")
_LIST = {"type": "array", "items": {"type": "string"}}
_WHERE = _param(
    "where",
    "query",
    {"type": "array", "items": {"type": "string", "pattern": WHERE}},
    "PATH=VALUE, as --where (repeatable, all must hold)",
)
_WHERE["style"], _WHERE["explode"] = "form", True
_ACROSS = _param("across_seeds", "query", {"type": "boolean"}, "the family, as --across-seeds")
_REF = _param(
    "ref",
    "path",
    {"type": "string", "pattern": RUN_REF},
    "a run id, or a DNA prefix (>= 6 hex): its newest run",
)
_DNA = {"type": "string", "pattern": DNA_PREFIX}
_PREFIX = _param("prefix", "path", _DNA, "a DNA prefix (>= 6 hex)")
_TIME = {"type": "string", "format": "date-time"}


def _get(
    summary: str,
    ok: dict[str, Any],
    parameters: Sequence[dict[str, Any]] = (),
    *,
    errors: tuple[int, ...] = (400, 404),
) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": ok}
    if 400 in errors:
        responses["400"] = _ERROR_400
    if 404 in errors:
        responses["404"] = _ERROR_404
    return {"get": {"summary": summary, "parameters": list(parameters), "responses": responses}}


def _runs(description: str) -> dict[str, Any]:
    return _json({"type": "array", "items": _ref("RunSummary")}, description)


def _named(name: str, what: str) -> dict[str, Any]:
    param = _param(name, "query", _LIST, f"{what}, as `expdna find --{name}`")
    param["style"], param["explode"] = "form", True
    return param


PATHS: dict[str, Any] = {
    "/api/runs": _get(
        "Recorded runs, newest first (expdna runs --json)",
        _runs("runs"),
        [
            _WHERE,
            _param("dna", "query", _DNA, "DNA prefix (>= 6 hex)"),
            _param("since", "query", _TIME, "generated at or after (ISO 8601, UTC)"),
            _param("until", "query", _TIME, "generated before (ISO 8601, UTC)"),
            _param("page", "query", {"type": "integer", "minimum": 1, "maximum": 10**9}, "from 1"),
            _param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 500}, "per page"),
        ],
        errors=(400,),
    ),
    "/api/runs/{ref}": _get(
        "One run's index record (expdna show --json)",
        _json({"type": "array", "items": _ref("RunRecord")}, "the run"),
        [_REF],
    ),
    "/api/runs/{ref}/manifest": _get(
        "The manifest as stored (expdna show --manifest)",
        _json({"type": "object"}, "the manifest document"),
        [_REF],
    ),
    "/api/dna/{prefix}": _get(
        "Every run of a DNA (expdna twins --json)", _runs("twins"), [_PREFIX, _ACROSS]
    ),
    "/api/stability/{prefix}": _get(
        "Per metric statistics over a DNA's runs (expdna stability --json)",
        _json(_ref("Stability"), "statistics"),
        [
            _PREFIX,
            _ACROSS,
            {**_param("metric", "query", _LIST, "only this metric"), "explode": True},
        ],
    ),
    "/api/diff": _get(
        "Two runs compared (expdna diff --json)",
        _json(_ref("Diff"), "the comparison"),
        [
            {
                **_param("a", "query", {"type": "string", "pattern": RUN_REF}, "run"),
                "required": True,
            },
            {
                **_param("b", "query", {"type": "string", "pattern": RUN_REF}, "run"),
                "required": True,
            },
        ],
    ),
    "/api/find": _get(
        "Runs matching every filter (expdna find --json)",
        _runs("runs"),
        [
            _named("vbios", "any GPU's VBIOS version"),
            _named("driver", "NVIDIA driver version"),
            _named("gpu", "GPU model"),
            _named("cuda", "CUDA version"),
            _named("nccl", "NCCL version"),
            _WHERE,
            _param(
                "limit", "query", {"type": "integer", "minimum": 1, "maximum": 10000}, "at most"
            ),
        ],
        errors=(400,),
    ),
    "/api/fleet": _get(
        "Runs per GPU model, driver, VBIOS, CUDA and NCCL version",
        _json(_ref("Fleet"), "counts, most runs first"),
        errors=(),
    ),
    "/api/lineage/{ref}": _get(
        "Ancestors and descendants (expdna lineage --json)",
        _json({"type": "array", "items": _ref("LineageEdge")}, "edges"),
        [_REF],
    ),
    "/api/checkpoints/{target}": _get(
        "The runs that pinned a checkpoint (expdna which --json), by name or blake3:<hex>",
        _json({"type": "array", "items": _ref("Pin")}, "pins, newest first"),
        [
            _param(
                "target", "path", {"type": "string", "pattern": PIN}, "a pin name or blake3:<hex>"
            )
        ],
    ),
}


def document() -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "expdna web view",
            "version": __version__,
            "description": "Read-only: every endpoint answers GET only.",
        },
        "paths": PATHS,
        "components": {"schemas": SCHEMAS},
    }
