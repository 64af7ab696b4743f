"""A Parquet writer in the standard library: flat tables of a few column types, uncompressed.

``expdna export`` writes Parquet for pandas, DuckDB and pyarrow to read. pyarrow would write
it, but importing pyarrow (and the numpy it imports) costs a command start more than a dozen
bare interpreters; the subset the export needs is small enough to write here instead.

What is written (the format: https://github.com/apache/parquet-format, ``parquet.thrift`` and
``Encodings.md``): the ``PAR1`` magic; per row group and column one column chunk of data pages
(version 1) whose values are PLAIN-encoded and whose definition levels (OPTIONAL columns only)
use the RLE/bit-packed hybrid; a footer (``FileMetaData`` in the Thrift compact protocol) with
the schema, the row groups and the key-value metadata; its length; ``PAR1`` again. No
compression, no dictionaries, no statistics, no nesting: every column is a top-level leaf.

Column kinds and the Python values they take (``None`` for a null, in a nullable column):

- ``string``: ``str``, as BYTE_ARRAY annotated UTF8/STRING;
- ``int32``, ``int64``: ``int``, as INT32, INT64;
- ``double``: ``float`` (or ``int``), as DOUBLE;
- ``boolean``: ``bool``, as BOOLEAN;
- ``timestamp``: ``datetime``, as INT64 microseconds annotated TIMESTAMP(UTC, MICROS); a naive
  datetime is taken as UTC (as the index stores times).
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from itertools import chain, compress, repeat
from types import TracebackType
from typing import Any, BinaryIO, Literal

Kind = Literal["string", "int32", "int64", "double", "boolean", "timestamp"]

MAGIC = b"PAR1"
#: A data page holds about this many bytes of values: a larger column chunk spans several.
PAGE_BYTES = 1 << 20

# parquet.thrift's enums, the members used here.
_BOOLEAN, _INT32, _INT64, _DOUBLE, _BYTE_ARRAY = 0, 1, 2, 5, 6
_REQUIRED, _OPTIONAL = 0, 1
_UTF8, _TIMESTAMP_MICROS = 0, 10  # ConvertedType
_PLAIN, _RLE = 0, 3  # Encoding
_UNCOMPRESSED = 0  # CompressionCodec
_DATA_PAGE = 0  # PageType

#: Kind -> physical type.
_PHYSICAL: dict[str, int] = {
    "string": _BYTE_ARRAY,
    "int32": _INT32,
    "int64": _INT64,
    "double": _DOUBLE,
    "boolean": _BOOLEAN,
    "timestamp": _INT64,
}
#: Fixed-width kind -> the struct code of its PLAIN values, and the bytes one takes.
_CODE = {"int32": "i", "int64": "q", "double": "d", "timestamp": "q"}
_WIDTH: dict[str, float] = {
    "int32": 4,
    "int64": 8,
    "double": 8,
    "boolean": 1 / 8,
    "timestamp": 8,
}
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_NAIVE_EPOCH = datetime(1970, 1, 1)
_U32 = struct.Struct("<I").pack
#: Eight definition levels -> the byte they bit-pack to, filled as met.
_PACKED: dict[bytes, int] = {}
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class Column:
    """One top-level column: its name, kind and whether it may hold nulls."""

    name: str
    kind: Kind
    nullable: bool = True

    def __post_init__(self) -> None:
        if self.kind not in _PHYSICAL:
            raise ValueError(f"column {self.name!r}: unknown kind {self.kind!r}")


# --- Thrift compact protocol ----------------------------------------------------------
# Only what the footer and page headers use: structs of i32, i64, binary, bool, list and
# struct fields. A field is (id, compact type, encoded value), written in ascending id order.

_T_TRUE, _T_FALSE, _T_I32, _T_I64, _T_BINARY, _T_LIST, _T_STRUCT = 1, 2, 5, 6, 8, 9, 12
Field = tuple[int, int, bytes]


def varint(n: int) -> bytes:
    """ULEB128: seven bits a byte, low bits first (``n`` >= 0)."""
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def zigzag(n: int) -> int:
    """A signed integer as the unsigned one varints carry: 0, -1, 1, -2… -> 0, 1, 2, 3…"""
    return n << 1 if n >= 0 else (-n << 1) - 1


def _i32(fid: int, value: int) -> Field:
    if not -(1 << 31) <= value < 1 << 31:
        raise ValueError(f"thrift field {fid}: {value} does not fit an i32")
    return fid, _T_I32, varint(zigzag(value))


def _i64(fid: int, value: int) -> Field:
    return fid, _T_I64, varint(zigzag(value))


def _binary_value(value: bytes | str) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    return varint(len(raw)) + raw


def _binary(fid: int, value: bytes | str) -> Field:
    return fid, _T_BINARY, _binary_value(value)


def _bool(fid: int, value: bool) -> Field:
    return fid, _T_TRUE if value else _T_FALSE, b""


def _struct(fid: int, encoded: bytes) -> Field:
    return fid, _T_STRUCT, encoded


def _list(fid: int, element_type: int, elements: Sequence[bytes]) -> Field:
    size = len(elements)
    head = bytes([size << 4 | element_type]) if size < 15 else bytes([0xF0 | element_type])
    return fid, _T_LIST, head + (varint(size) if size >= 15 else b"") + b"".join(elements)


def struct_bytes(*fields: Field | None) -> bytes:
    """A struct: its fields (``None`` ones left out), each headed by its id as a delta from
    the previous one where that fits four bits, then a stop byte."""
    out = bytearray()
    last = 0
    for field in fields:
        if field is None:
            continue
        fid, kind, value = field
        if 0 < fid - last <= 15:
            out.append((fid - last) << 4 | kind)
        else:
            out.append(kind)
            out += varint(zigzag(fid))
        out += value
        last = fid
    out.append(0)
    return bytes(out)


def _zigzag_list(values: Sequence[int]) -> list[bytes]:
    return [varint(zigzag(v)) for v in values]


# --- encodings ------------------------------------------------------------------------


def levels(defined: bytes) -> bytes:
    """Definition levels (one byte each, 0 or 1) in the RLE/bit-packed hybrid with bit width
    1, prefixed with its length (4 bytes, little-endian) as data pages v1 carry them.

    A run of eight or more equal levels, or the last run, is one RLE run; anything else is
    bit-packed eight levels a byte, lowest bit first (the last byte padded with zeros)."""
    out = bytearray()
    packed = bytearray()
    n = len(defined)
    i = 0
    while i < n:
        value = defined[i]
        end = defined.find(b"\x00" if value else b"\x01", i)
        end = n if end < 0 else end
        if end - i >= 8 or end == n:
            if packed:
                out += varint(len(packed) << 1 | 1) + packed
                packed.clear()
            out += varint((end - i) << 1) + bytes([value])
            i = end
            continue
        group = defined[i : i + 8]
        byte = _PACKED.get(group)
        if byte is None:
            byte = _PACKED[group] = sum(bit << k for k, bit in enumerate(group))
        packed.append(byte)
        i += 8
    if packed:
        out += varint(len(packed) << 1 | 1) + packed
    return _U32(len(out)) + out


def _micros(value: datetime) -> int:
    epoch = _NAIVE_EPOCH if value.utcoffset() is None else _EPOCH
    return (value - epoch) // _MICROSECOND


def _strings(values: Sequence[Any]) -> tuple[list[bytes], list[bytes]]:
    """The values' UTF-8 lengths (4 bytes, little-endian) and UTF-8: PLAIN-encoded, each
    length goes before its value."""
    try:
        raw = [value.encode() for value in values]
    except AttributeError:
        wrong = next(value for value in values if not isinstance(value, str))
        raise TypeError(f"expected a str, got {type(wrong).__name__}") from None
    return list(map(_U32, map(len, raw))), raw


def _plain(kind: str, values: Sequence[Any]) -> bytes:
    """Non-null ``values`` of a fixed-width kind PLAIN-encoded."""
    if kind == "boolean":
        out = bytearray((len(values) + 7) // 8)
        for i, value in enumerate(values):
            if not isinstance(value, bool):
                raise TypeError(f"expected a bool, got {type(value).__name__}")
            if value:
                out[i >> 3] |= 1 << (i & 7)
        return bytes(out)
    if kind == "timestamp":
        values = [_micros(value) for value in values]
    return struct.pack(f"<{len(values)}{_CODE[kind]}", *values)


# --- the file -------------------------------------------------------------------------


def _pages(column: Column, values: Sequence[Any], page_bytes: int) -> Iterator[bytes]:
    """``values`` as data pages (v1) of about ``page_bytes`` each: a page header, the
    definition levels of a nullable column, then the values that are not null."""
    rows = len(values)
    defined = bytes(map(operator.is_not, values, repeat(None)))
    present = list(compress(values, defined))
    if not column.nullable and len(present) != rows:
        raise ValueError("a null in a column that holds none")
    strings = column.kind == "string"
    lengths, raw = _strings(present) if strings else ([], [])
    size = 4 * len(raw) + sum(map(len, raw)) if strings else len(present) * _WIDTH[column.kind]
    step = rows if size <= page_bytes else max(1, int(rows * page_bytes / size))
    done = 0  # present values written
    for first in range(0, rows, step):
        page = defined[first : first + step]
        count = page.count(1)
        body = levels(page) if column.nullable else b""
        if strings:
            part = slice(done, done + count)
            body += b"".join(chain.from_iterable(zip(lengths[part], raw[part], strict=True)))
        else:
            body += _plain(column.kind, present[done : done + count])
        done += count
        data_page = struct_bytes(_i32(1, len(page)), _i32(2, _PLAIN), _i32(3, _RLE), _i32(4, _RLE))
        header = struct_bytes(
            _i32(1, _DATA_PAGE), _i32(2, len(body)), _i32(3, len(body)), _struct(5, data_page)
        )
        yield header + body


def _schema_element(column: Column) -> bytes:
    converted = logical = None
    if column.kind == "string":
        converted = _i32(6, _UTF8)
        logical = _struct(10, struct_bytes(_struct(1, struct_bytes())))  # STRING
    elif column.kind == "timestamp":
        converted = _i32(6, _TIMESTAMP_MICROS)
        micros = struct_bytes(_struct(2, struct_bytes()))  # TimeUnit.MICROS
        stamp = struct_bytes(_bool(1, True), _struct(2, micros))  # isAdjustedToUTC, unit
        logical = _struct(10, struct_bytes(_struct(8, stamp)))  # TIMESTAMP
    return struct_bytes(
        _i32(1, _PHYSICAL[column.kind]),
        _i32(3, _OPTIONAL if column.nullable else _REQUIRED),
        _binary(4, column.name),
        converted,
        logical,
    )


class ParquetWriter:
    """Write a Parquet file to ``out`` (a binary file open for writing), one
    :meth:`write_row_group` call a row group; :meth:`close` (or leaving the ``with`` block
    without an exception) writes the footer. ``metadata`` becomes the file's key-value
    metadata (pyarrow shows it as the schema's metadata)."""

    def __init__(
        self,
        out: BinaryIO,
        columns: Sequence[Column],
        *,
        metadata: Mapping[str, str] | None = None,
        created_by: str = "expdna",
        page_bytes: int = PAGE_BYTES,
    ) -> None:
        names = [column.name for column in columns]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate column names: {names}")
        self._out = out
        self._columns = list(columns)
        self._metadata = dict(metadata or {})
        self._created_by = created_by
        self._page_bytes = page_bytes
        self._row_groups: list[bytes] = []
        self._rows = 0
        self._closed = False
        self._offset = 0
        self._write(MAGIC)

    def _write(self, data: bytes | bytearray) -> None:
        self._out.write(data)
        self._offset += len(data)

    def write_row_group(self, data: Mapping[str, Sequence[Any]]) -> None:
        """One row group: ``data`` maps every column's name to its values, all as long.
        No rows, no row group."""
        if self._closed:
            raise ValueError("the writer is closed")
        if set(data) != {column.name for column in self._columns}:
            raise ValueError(f"expected the columns {[c.name for c in self._columns]}")
        lengths = {len(data[column.name]) for column in self._columns}
        if len(lengths) > 1:
            raise ValueError(f"columns of different lengths: {sorted(lengths)}")
        rows = lengths.pop() if lengths else 0
        if not rows:
            return
        # Encoded whole before any of it is written: a bad value leaves the file as it was.
        start = self._offset
        body = bytearray()
        chunks = []
        for column in self._columns:
            try:
                chunks.append(self._column_chunk(column, data[column.name], body, start))
            except (TypeError, ValueError, OverflowError, struct.error) as exc:
                # a value the column cannot hold (a UnicodeEncodeError is a ValueError too)
                kind = TypeError if isinstance(exc, TypeError) else ValueError
                raise kind(f"column {column.name!r}: {exc}") from None
        self._write(body)
        self._row_groups.append(
            struct_bytes(
                _list(1, _T_STRUCT, chunks),
                _i64(2, len(body)),
                _i64(3, rows),
                _i64(5, start),
                _i64(6, len(body)),
            )
        )
        self._rows += rows

    def _column_chunk(
        self, column: Column, values: Sequence[Any], body: bytearray, offset: int
    ) -> bytes:
        """Append ``values`` to ``body`` (which starts at ``offset`` in the file) as data
        pages; the ColumnChunk describing them."""
        start = offset + len(body)
        for page in _pages(column, values, self._page_bytes):
            body += page
        size = offset + len(body) - start
        meta = struct_bytes(
            _i32(1, _PHYSICAL[column.kind]),
            _list(2, _T_I32, _zigzag_list([_PLAIN, _RLE])),
            _list(3, _T_BINARY, [_binary_value(column.name)]),
            _i32(4, _UNCOMPRESSED),
            _i64(5, len(values)),
            _i64(6, size),
            _i64(7, size),
            _i64(9, start),
        )
        return struct_bytes(_i64(2, 0), _struct(3, meta))

    def close(self) -> None:
        """Write the footer; the file is complete. A second call does nothing."""
        if self._closed:
            return
        self._closed = True
        root = struct_bytes(_binary(4, "schema"), _i32(5, len(self._columns)))
        elements = [root, *(_schema_element(column) for column in self._columns)]
        pairs = [struct_bytes(_binary(1, k), _binary(2, v)) for k, v in self._metadata.items()]
        footer = struct_bytes(
            _i32(1, 1),
            _list(2, _T_STRUCT, elements),
            _i64(3, self._rows),
            _list(4, _T_STRUCT, self._row_groups),
            _list(5, _T_STRUCT, pairs) if pairs else None,
            _binary(6, self._created_by),
        )
        self._write(footer)
        self._write(struct.pack("<I", len(footer)))
        self._write(MAGIC)

    def __enter__(self) -> ParquetWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # On an error the file is left without a footer: no reader takes it for complete.
        if exc_type is None:
            self.close()
