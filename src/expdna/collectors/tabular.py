"""Parquet and Arrow IPC (Feather v2) facts from the file footer alone: no data is read.

pyarrow is imported only when a dataset holds such a file; without it the facts are
missing and a warning says why. Facts are cached by file digest (see expdna.digest.cache), so an
unchanged dataset does not import pyarrow at all.

The schema digest is ``blake3:`` of canonical JSON of ``[[name, type, nullable], ...]`` of
the top-level fields after ``remove_metadata()``, ``type`` written as ``str(type)`` spells
nested types out (``struct<a: int64 not null>``) but without the names of list and map
children (see :func:`type_text`). Schema and field metadata (pandas index, writer versions)
stay out, so rewriting the same table with another writer keeps the digest.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from expdna.digest import ref_of
from expdna.manifest.canonical import canonical_bytes

if TYPE_CHECKING:
    from expdna.digest.cache import DigestCache

log = logging.getLogger(__name__)

#: Bump when the facts or the schema digest change: cached facts of other versions are
#: ignored.
FACTS_VERSION = 1
#: File name suffix -> format. Feather v2 *is* the Arrow IPC file format (Feather v1,
#: deprecated, has no footer-only reader and gets a warning).
FORMATS: dict[str, str] = {
    ".parquet": "parquet",
    ".parq": "parquet",
    ".pq": "parquet",
    ".arrow": "arrow",
    ".ipc": "arrow",
    ".feather": "arrow",
}
#: Per-file entries up to this many table files in one dataset; above it, one entry per
#: (format, schema) with totals, so a dataset of 10,000 shards stays a few lines.
MAX_TABLE_ENTRIES = 100


def table_format(relpath: str) -> str | None:
    return FORMATS.get(PurePosixPath(relpath).suffix.lower())


def schema_digest(schema: Any) -> str:
    """The ``blake3:`` fingerprint of a ``pyarrow.Schema`` (metadata left out)."""
    bare = schema.remove_metadata()
    fields = [[f.name, type_text(f.type), bool(f.nullable)] for f in bare]
    return ref_of(canonical_bytes(fields))


def type_text(t: Any) -> str:
    """``str(t)``, except that list and map children lose their names.

    Arrow names a list's child ``item``, Parquet (``use_compliant_nested_type``, the
    default since pyarrow 13) ``element``: the same column read back from Parquet and from
    Feather must fingerprint the same. Struct field names are data and stay.
    """
    import pyarrow.types as pat

    if pat.is_struct(t):
        return f"struct<{', '.join(_field_text(t.field(i)) for i in range(t.num_fields))}>"
    if pat.is_map(t):
        return f"map<{type_text(t.key_type)}, {_child_text(t.item_field)}>"
    if pat.is_fixed_size_list(t):
        return f"fixed_size_list<{_child_text(t.value_field)}>[{t.list_size}]"
    for name in ("list", "large_list", "list_view", "large_list_view"):
        if getattr(pat, f"is_{name}", lambda _: False)(t):
            return f"{name}<{_child_text(t.value_field)}>"
    if pat.is_dictionary(t):
        return (
            f"dictionary<values={type_text(t.value_type)}, indices={t.index_type}, "
            f"ordered={int(t.ordered)}>"
        )
    return str(t)


def _child_text(f: Any) -> str:
    return type_text(f.type) + ("" if f.nullable else " not null")


def _field_text(f: Any) -> str:
    return f"{f.name}: {_child_text(f)}"


def _parquet(path: str) -> dict[str, Any]:
    import pyarrow.parquet as pq

    meta = pq.read_metadata(path)
    schema = pq.read_schema(path)
    return {
        "format": "parquet",
        "schema_digest": schema_digest(schema),
        "rows": meta.num_rows,
        "row_groups": meta.num_row_groups,
        "columns": len(schema),
    }


def _ipc(path: str) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.ipc as ipc

    with open(path, "rb") as fh:
        if fh.read(4) == b"FEA1":
            raise ValueError("Feather V1 (deprecated) has no footer-only reader")
    # Memory-mapped: count_rows reads each record batch's small header, never its body.
    with pa.memory_map(path) as source:
        reader = ipc.open_file(source)
        return {
            "format": "arrow",
            "schema_digest": schema_digest(reader.schema),
            "rows": _ipc_rows(reader),
            "record_batches": reader.num_record_batches,
            "columns": len(reader.schema),
        }


def _ipc_rows(reader: Any) -> int:
    if hasattr(reader, "count_rows"):  # pyarrow >= 26
        return int(reader.count_rows())
    # Older pyarrow: on a memory map, get_batch maps the batch zero-copy, so its body is
    # never read, only its header's row count.
    return sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))


READERS: dict[str, Callable[[str], dict[str, Any]]] = {"parquet": _parquet, "arrow": _ipc}


@dataclass
class Tables:
    """What :func:`describe_tables` found: manifest entries and warnings."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    grouped: bool = False
    warnings: list[str] = field(default_factory=list)


def describe_tables(
    files: Sequence[tuple[str, str, str]], cache: DigestCache | None = None
) -> Tables:
    """Footer facts of ``files`` (relpath, absolute path, BLAKE3 hex), sorted by relpath."""
    result = Tables()
    candidates = [(rel, path, hexd) for rel, path, hexd in files if table_format(rel)]
    if not candidates:
        return result
    known = cache.footers([h for _, _, h in candidates], FACTS_VERSION) if cache else {}
    fresh: dict[str, dict[str, Any]] = {}
    no_pyarrow, skipped = False, 0
    per_file = []
    for rel, path, hexd in sorted(candidates):
        facts = known.get(hexd) or fresh.get(hexd)
        if facts is None and not no_pyarrow:
            fmt = table_format(rel)
            assert fmt is not None
            try:
                facts = READERS[fmt](path)
            except ImportError:
                no_pyarrow = True
            except Exception as exc:  # a bad footer is a warning, not a failed dataset
                result.warnings.append(f"{rel}: no {fmt} footer read ({exc})")
            else:
                fresh[hexd] = facts
        if facts is None:
            skipped += no_pyarrow
            continue
        per_file.append({"path": rel, **facts})
    if skipped:
        result.warnings.append(
            f"pyarrow is not installed: {skipped} Parquet/Arrow file(s) without a schema "
            "fingerprint (pip install 'expdna[parquet]')"
        )
    if cache is not None and fresh:
        cache.keep_footers(fresh, FACTS_VERSION)
    if len(per_file) <= MAX_TABLE_ENTRIES:
        result.entries = per_file
    else:
        result.entries, result.grouped = _grouped(per_file), True
    return result


def _grouped(per_file: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in per_file:
        key = (entry["format"], entry["schema_digest"])
        group = groups.setdefault(
            key,
            {
                "format": key[0],
                "schema_digest": key[1],
                "columns": entry["columns"],
                "files": 0,
                "rows": 0,
            },
        )
        group["files"] += 1
        group["rows"] += entry["rows"]
        for counter in ("row_groups", "record_batches"):
            if counter in entry:
                group[counter] = group.get(counter, 0) + entry[counter]
    return [groups[key] for key in sorted(groups)]
