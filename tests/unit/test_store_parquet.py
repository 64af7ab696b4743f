"""The standard-library Parquet writer, read back by pyarrow (the oracle): every column kind,
nulls, row groups and pages, the footer's schema and metadata, and random tables."""

from __future__ import annotations

import io
import math
import struct
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expdna.store.parquet import (
    Column,
    Kind,
    ParquetWriter,
    levels,
    struct_bytes,
    varint,
    zigzag,
)

ARROW: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}
UTC = timezone.utc


def written(
    columns: Sequence[Column],
    groups: Sequence[Mapping[str, Sequence[Any]]],
    *,
    metadata: Mapping[str, str] | None = None,
    page_bytes: int = 1 << 20,
) -> bytes:
    out = io.BytesIO()
    with ParquetWriter(out, columns, metadata=metadata, page_bytes=page_bytes) as writer:
        for group in groups:
            writer.write_row_group(group)
    return out.getvalue()


def arrow_schema(columns: Sequence[Column]) -> pa.Schema:
    return pa.schema([pa.field(c.name, ARROW[c.kind], nullable=c.nullable) for c in columns])


def expected(kind: str, value: Any) -> Any:
    """``value`` as pyarrow gives it back: times as aware UTC datetimes."""
    if kind == "timestamp" and value is not None:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value


def same(kind: str, got: Any, want: Any) -> bool:
    if kind == "double" and got is not None and want is not None:
        # NaN and -0.0 too: the very bits that were written
        return struct.pack("<d", got) == struct.pack("<d", want)
    if kind == "timestamp" and got is not None:
        return bool(got == want and got.utcoffset() == timedelta(0))
    return bool(got == want) and type(got) is type(want)


EVERY_KIND = [
    Column("name", "string"),
    Column("run_id", "string", nullable=False),
    Column("dna_version", "int32", nullable=False),
    Column("count", "int64"),
    Column("metric_reward.mean", "double"),
    Column("ok", "boolean"),
    Column("generated_at", "timestamp", nullable=False),
    Column("when", "timestamp"),
]
ROWS: dict[str, list[Any]] = {
    "name": ["é中", None, "", "x" * 300],
    "run_id": ["a", "b", "c", "d"],
    "dna_version": [1, -(2**31), 2**31 - 1, 0],
    "count": [None, 2**63 - 1, -(2**63), None],
    "metric_reward.mean": [0.5, None, math.inf, -0.0],
    "ok": [True, False, None, True],
    "generated_at": [
        datetime(2026, 8, 5, 0, 0, 3),
        datetime(1969, 12, 31, 23, 59, 59, 999999),  # -1 µs: floor, not truncation
        datetime(1, 1, 1),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ],
    "when": [None, datetime(2026, 1, 1, 2, tzinfo=timezone(timedelta(hours=2))), None, None],
}


def test_every_kind_and_null_reads_back_through_pyarrow() -> None:
    data = written(EVERY_KIND, [ROWS], metadata={"expdna.export": "runs v1"})
    assert data[:4] == data[-4:] == b"PAR1"
    table = pq.read_table(io.BytesIO(data))
    assert table.schema.metadata == {b"expdna.export": b"runs v1"}
    assert table.schema.remove_metadata() == arrow_schema(EVERY_KIND)
    for column in EVERY_KIND:
        got = table.column(column.name).to_pylist()
        want = [expected(column.kind, v) for v in ROWS[column.name]]
        assert all(map(same, [column.kind] * 4, got, want)), (column.name, got, want)
    assert table.column("when").to_pylist()[1] == datetime(2026, 1, 1, 0, tzinfo=UTC)
    # pyarrow's reading with the schema it would be given, too
    typed = pq.read_table(io.BytesIO(data), schema=arrow_schema(EVERY_KIND))
    assert typed.to_pylist() == table.to_pylist()


def test_row_groups_pages_and_an_empty_file() -> None:
    columns = [Column("i", "int64"), Column("s", "string", nullable=False)]
    rows = [{"i": list(range(n)), "s": [str(k) * 7 for k in range(n)]} for n in (100, 1, 37)]
    data = written(columns, [*rows, {"i": [], "s": []}], page_bytes=40)  # ~5 values a page
    meta = pq.read_metadata(io.BytesIO(data))
    assert (meta.num_row_groups, meta.num_rows) == (3, 138)  # the empty group is left out
    assert [meta.row_group(g).num_rows for g in range(3)] == [100, 1, 37]
    chunk = meta.row_group(0).column(0)
    assert chunk.total_compressed_size > 800 + 10 * 20  # values plus ~20 page headers
    assert chunk.compression == "UNCOMPRESSED" and chunk.path_in_schema == "i"
    table = pq.read_table(io.BytesIO(data))
    assert table.column("i").to_pylist() == [*range(100), 0, *range(37)]
    assert table.column("s").to_pylist()[-1] == "36" * 7

    empty = pq.read_table(io.BytesIO(written(columns, [])))
    assert empty.num_rows == 0 and empty.schema == arrow_schema(columns)


@pytest.mark.parametrize("page_bytes", [1, 1 << 20])
def test_columns_of_nulls_only(page_bytes: int) -> None:
    columns = [Column(kind, kind) for kind in ARROW]  # type: ignore[arg-type]
    data = written(columns, [{c.name: [None] * 20 for c in columns}], page_bytes=page_bytes)
    table = pq.read_table(io.BytesIO(data))
    assert table.schema == arrow_schema(columns)
    assert table.to_pylist() == [dict.fromkeys(ARROW)] * 20


def test_a_value_longer_than_a_page() -> None:
    big = "λ" * 5000
    data = written([Column("s", "string")], [{"s": [big, None, "a"]}], page_bytes=100)
    assert pq.read_table(io.BytesIO(data)).column("s").to_pylist() == [big, None, "a"]


def test_bad_rows_are_refused() -> None:
    out = io.BytesIO()
    writer = ParquetWriter(out, [Column("i", "int32", nullable=False), Column("s", "string")])
    with pytest.raises(ValueError, match="a null in a column that holds none"):
        writer.write_row_group({"i": [None], "s": ["x"]})
    with pytest.raises(TypeError, match="column 's'"):
        writer.write_row_group({"i": [1], "s": [3]})
    with pytest.raises(ValueError, match="column 'i'"):
        writer.write_row_group({"i": [2**31], "s": ["x"]})
    with pytest.raises(ValueError, match="column 's': 'utf-8' codec can't encode"):
        writer.write_row_group({"i": [1], "s": ["\ud800"]})  # a lone surrogate is no UTF-8
    with pytest.raises(ValueError, match="different lengths"):
        writer.write_row_group({"i": [1, 2], "s": ["x"]})
    with pytest.raises(ValueError, match="expected the columns"):
        writer.write_row_group({"i": [1]})
    with pytest.raises(ValueError, match="duplicate"):
        ParquetWriter(io.BytesIO(), [Column("a", "string"), Column("a", "int64")])
    with pytest.raises(ValueError, match="unknown kind"):
        Column("a", "float")  # type: ignore[arg-type]
    writer.close()
    writer.close()  # once only
    assert pq.read_table(io.BytesIO(out.getvalue())).num_rows == 0  # nothing half-written
    with pytest.raises(ValueError, match="closed"):
        writer.write_row_group({"i": [1], "s": ["x"]})


def test_a_failed_write_leaves_no_footer() -> None:
    out = io.BytesIO()
    with pytest.raises(TypeError), ParquetWriter(out, [Column("s", "string")]) as writer:
        writer.write_row_group({"s": [b"bytes"]})
    assert out.getvalue() == b"PAR1"


# --- the encodings, byte for byte (parquet-format's Encodings.md, Thrift's compact spec) --


def test_varint_and_zigzag() -> None:
    assert [varint(n) for n in (0, 1, 127, 128, 300)] == [
        b"\x00",
        b"\x01",
        b"\x7f",
        b"\x80\x01",
        b"\xac\x02",
    ]
    assert [zigzag(n) for n in (0, -1, 1, -2, 2**31 - 1, -(2**63))] == [
        0,
        1,
        2,
        3,
        2**32 - 2,
        2**64 - 1,
    ]


def test_struct_fields_short_and_long_form() -> None:
    i32 = 5
    # field 1 then field 20 (a delta past 15: type byte, then the zigzagged id), value 1
    assert struct_bytes((1, i32, b"\x02"), (20, i32, b"\x02")) == b"\x15\x02\x05\x28\x02\x00"
    assert struct_bytes(None) == b"\x00"


@pytest.mark.parametrize(
    ("defined", "encoded"),
    [
        (b"", b""),
        (b"\x01" * 10, b"\x14\x01"),  # one RLE run of ten 1s
        (b"\x01\x00" * 4, b"\x03\x55"),  # one bit-packed group, lowest bit first
        (b"\x01\x00\x01", b"\x03\x05"),  # the last group padded with zeros
        (b"\x00" * 8 + b"\x01\x00", b"\x10\x00\x03\x01"),  # RLE run, then bit-packed
        (b"\x01\x00" + b"\x01" * 9, b"\x03\xfd\x06\x01"),  # a group, then the rest as a run
    ],
)
def test_definition_levels_hybrid(defined: bytes, encoded: bytes) -> None:
    assert levels(defined) == struct.pack("<I", len(encoded)) + encoded


# --- random tables ----------------------------------------------------------------------

VALUES: dict[str, st.SearchStrategy[Any]] = {
    "string": st.text(max_size=12),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "double": st.floats(),
    "boolean": st.booleans(),
    "timestamp": st.datetimes(timezones=st.sampled_from([None, UTC])),
}


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[Column], list[dict[str, list[Any]]]]:
    names = draw(st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=6, unique=True))
    kinds: list[Kind] = ["string", "int32", "int64", "double", "boolean", "timestamp"]
    columns = [Column(name, draw(st.sampled_from(kinds)), draw(st.booleans())) for name in names]
    groups = []
    for rows in draw(st.lists(st.integers(0, 40), max_size=3)):
        group = {}
        for column in columns:
            value = VALUES[column.kind]
            cell = st.none() | value if column.nullable else value
            group[column.name] = draw(st.lists(cell, min_size=rows, max_size=rows))
        groups.append(group)
    return columns, groups


@settings(max_examples=150, deadline=None)
@given(tables(), st.sampled_from([1, 16, 1 << 20]))
def test_random_tables_round_trip(
    table: tuple[list[Column], list[dict[str, list[Any]]]], page_bytes: int
) -> None:
    columns, groups = table
    data = written(columns, groups, page_bytes=page_bytes)
    read = pq.read_table(io.BytesIO(data))
    assert read.schema == arrow_schema(columns)
    nonempty = sum(1 for group in groups if group[columns[0].name])
    assert pq.read_metadata(io.BytesIO(data)).num_row_groups == nonempty
    for column in columns:
        got = read.column(column.name).to_pylist()
        want = [expected(column.kind, v) for g in groups for v in g[column.name]]
        assert len(got) == len(want)
        assert all(map(same, [column.kind] * len(got), got, want)), (column, got, want)
