"""The escaped form of bytes that are not UTF-8: lossless, and JSON-safe."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from expdna.manifest.canonical import canonical_bytes
from expdna.manifest.escape import (
    escape,
    escape_bytes,
    escape_tree,
    is_escaped,
    needs_escape,
    to_bytes,
    to_os_str,
)


@given(st.binary(max_size=64))
def test_any_os_bytes_round_trip(raw: bytes) -> None:
    text = os.fsdecode(raw)  # what Python hands over for argv, environ and paths
    recorded = escape(text)
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in recorded)
    canonical_bytes({"v": recorded})  # JSON and RFC 8785 can carry it
    assert to_bytes(recorded) == raw
    assert to_os_str(recorded) == text


@given(st.text(max_size=64).filter(lambda t: not needs_escape(t)))
def test_text_that_needs_nothing_is_kept_as_it_is(text: str) -> None:
    assert escape(text) == text
    assert to_os_str(text) == text


def test_the_documented_form() -> None:
    assert escape(os.fsdecode(b"caf\xe9 100%")) == "bytes:caf%E9 100%25"
    assert escape_bytes("学习率".encode()) == "bytes:学习率"
    # A real word that looks escaped is escaped again, so decoding can never be fooled.
    assert escape("bytes:%FF") == "bytes:bytes:%25FF"
    assert to_bytes(escape("bytes:%FF")) == b"bytes:%FF"
    assert not is_escaped("--lr")


def test_escape_tree_escapes_keys_and_values_and_keeps_clean_objects() -> None:
    bad = os.fsdecode(b"\xff")
    doc = {"argv": ["python", bad], bad: {"ok": 1}, "n": 2.5}
    escaped = escape_tree(doc)
    assert escaped == {"argv": ["python", "bytes:%FF"], "bytes:%FF": {"ok": 1}, "n": 2.5}
    clean = {"argv": ["python", "train.py"], "x": {"y": [1, "z"]}}
    assert escape_tree(clean) is clean
