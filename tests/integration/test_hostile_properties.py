"""Property-based: generated malformed manifests and arguments, thrown at every command
through click's runner (in this process, for speed). Whatever comes in, a command exits
0, 1 or 2, never with a traceback, and one that exits 2 leaves the store as it was.

``generate`` collects this machine (a fraction of a second each), so it gets fewer examples
of its own. Left out on purpose: ``rerun --confirm`` (a generated argument list must never be
able to run a recorded command) and ``ui`` (it serves until stopped).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from expdna.cli import COMMANDS, cli
from expdna.manifest.io import write_manifest
from expdna.store import SQLITE_NAME
from tests.factories import synthetic, synthetic_doc

EXIT_CODES = {0, 1, 2}
SETTINGS = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,  # the same examples every run: CI never meets a new one by chance
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# --- the store and files every example shares -----------------------------------------


@pytest.fixture(scope="module")
def place() -> Iterator[Path]:
    """A directory holding a store with three runs, a good manifest and odd files."""
    root = Path(tempfile.mkdtemp(prefix="expdna-props-"))
    files = [write_manifest(synthetic(i), root / f"manifest_{i}.json") for i in range(3)]
    result = CliRunner().invoke(cli, ["--store", str(root / "store"), "record", *map(str, files)])
    assert result.exit_code == 0, result.output
    os.mkfifo(root / "fifo.json")
    (root / "dir.json").mkdir()
    (root / "empty.json").write_bytes(b"")
    # a generated argument may name a file to write (export --parquet 1e400): it lands here
    cwd = os.getcwd()
    os.chdir(root)
    try:
        yield root
    finally:
        os.chdir(cwd)
        shutil.rmtree(root)


def snapshot(store: Path) -> tuple[Any, ...]:
    """What a store holds: its objects and the index's rows that name runs."""
    objects = sorted(
        str(p.relative_to(store)) for p in (store / "objects").rglob("*") if p.is_file()
    )
    with sqlite3.connect(f"file:{store / SQLITE_NAME}?mode=ro", uri=True) as conn:
        rows = tuple(
            tuple(conn.execute(sql).fetchall())
            for sql in (
                "SELECT run_id, dna FROM runs ORDER BY run_id",
                "SELECT parent_run_id, child_run_id, relation FROM lineage ORDER BY 1, 2, 3",
                "SELECT digest, name FROM pins ORDER BY 1, 2",
            )
        )
    return (objects, rows)


def invoke(place: Path, args: list[str]) -> Result:
    return CliRunner().invoke(cli, ["--store", str(place / "store"), *args])


def check(place: Path, args: list[str]) -> Result:
    before = snapshot(place / "store")
    result = invoke(place, args)
    shown = f"{args!r}\n{result.output}"
    assert result.exit_code in EXIT_CODES, shown
    assert "Traceback" not in result.output, shown
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), shown
    if result.exit_code == 2:
        assert snapshot(place / "store") == before, shown
    return result


# --- generated values ------------------------------------------------------------------

HOSTILE_TEXT = st.sampled_from(
    [
        "",
        "\x00",
        "a\x00b",
        "\n#",
        "\x1b[31m",
        "bytes:%ZZ",
        "bytes:%00",
        "'$(touch PWNED)'",
        "blake3:" + "0" * 63,
        "blake3:" + "G" * 64,
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-01:00",
        "1e400",
        "-0",
        "../../etc/passwd",
        "é" * 300,
    ]
)
TEXT = st.one_of(HOSTILE_TEXT, st.text(max_size=40))
LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
VALUE = st.recursive(
    LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=8,
)
#: Paths a mutation may set, from the manifest's own fields and a few made up.
PATHS = [
    "run_id",
    "generated_at",
    "schema_version",
    "command.argv",
    "command.cwd",
    "code.train.commit",
    "code.train.patch",
    "code.train.patch.digest",
    "code.train.patch.text",
    "config.resolved_args.lr",
    "config.resolved_args",
    "config.selected_env",
    "config.selected_env.PYTHONPATH",
    "config.dna_ignore",
    "training.seeds",
    "environment.packages_digest",
    "hardware.gpus",
    "runtime.nodes",
    "data.datasets",
    "metrics",
    "lineage",
    "unknown",
    "dna",
    "dna.value",
    "collection.redacted",
    "new_field.deep",
]


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node: Any = doc
    for key in parents:
        if not isinstance(node, dict):
            return
        node = node.setdefault(key, {})
    if isinstance(node, dict):
        node[last] = value


@st.composite
def manifest_bytes(draw: st.DrawFn) -> bytes:
    """A manifest file: a good one with some fields set to anything, its DNA kept or
    dropped, or text that is not a manifest at all."""
    kind = draw(st.sampled_from(["mutated", "mutated", "mutated", "cut", "bytes", "raw"]))
    doc = synthetic(draw(st.integers(min_value=0, max_value=5))).to_dict()
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "raw":
        return draw(
            st.sampled_from(
                [
                    b'{"run_id": "\\ud800"}',
                    b"[]",
                    b"{" * 100 + b"}" * 100,
                    b'{"a": NaN}',
                    b'{"a": 1e400, "run_id": "x", "generated_at": "2026-01-01T00:00:00Z"}',
                    b'{"a": 1, "a": 2}',
                    b"\xef\xbb\xbf{}",
                    json.dumps({**synthetic_doc(7), "schema_version": "2.0"}).encode(),
                ]
            )
        )
    text = json.dumps(doc, ensure_ascii=draw(st.booleans())).encode()
    if kind == "cut":
        return text[: draw(st.integers(min_value=0, max_value=len(text) - 1))]
    # a fresh run id, so an edit is judged on itself rather than as a conflict
    doc["run_id"] = f"20260901_000000_fuzz_{draw(st.integers(0, 10**6)):07d}"
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        # mostly text, which most fields accept: the edit then reaches the deeper checks
        _set(doc, draw(st.sampled_from(PATHS)), draw(st.one_of(TEXT, TEXT, VALUE)))
    if draw(st.booleans()):
        doc.pop("dna", None)  # recomputed when recorded: the edit is then not refused for it
    return json.dumps(doc, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")


MANIFEST_COMMANDS = [
    ["record", "{file}"],
    ["record", "{file}", "{good}"],
    ["check", "{file}"],
    ["diff", "{file}", "{good}"],
    ["rerun", "{file}", "--dry-run"],
    ["data", "verify", "{file}"],
    ["twins", "{file}"],
    ["record", "--scan", "{dir}"],
]


@SETTINGS
@given(data=manifest_bytes(), command=st.sampled_from(MANIFEST_COMMANDS))
def test_malformed_manifests(place: Path, data: bytes, command: list[str]) -> None:
    with tempfile.TemporaryDirectory(dir=place) as scratch:
        path = Path(scratch) / "manifest_x.json"
        path.write_bytes(data)
        names = {"file": str(path), "good": str(place / "manifest_0.json"), "dir": scratch}
        check(place, [word.format(**names) for word in command])


# --- arguments -------------------------------------------------------------------------

#: Every command (from the table the group lists), less those the module doc names.
# `run` exits with its command's own code (127 for one that cannot start), by design.
ARGUMENT_COMMANDS = sorted(set(COMMANDS) - {"generate", "ui", "run"})
WORDS = st.one_of(
    HOSTILE_TEXT,
    st.sampled_from(
        [
            "{good}",
            "{fifo}",
            "{dir}",
            "{empty}",
            "{missing}",
            "{run}",
            "{dna}",
            "{dna6}",
            "abcdef",
            "20990101_000000_nogit_zzzz",
            "--json",
            "--where",
            "config.resolved_args.lr=1e-2",
            "a..b=1",
            "=",
            "--since",
            "--limit",
            "-1",
            "--dry-run",
            "--as",
            "rerun_of",
            "--run",
            "--name",
            "--parquet",
            "{out}",
            "--scan",
            "--across-seeds",
            "--inline",
            "--manifest",
            "verify",
            "current",
            "--vbios",
            "--",
        ]
    ),
    st.text(max_size=12),
)


@SETTINGS
@given(
    command=st.sampled_from(ARGUMENT_COMMANDS),
    words=st.lists(WORDS, max_size=5),
)
def test_generated_arguments(place: Path, command: str, words: list[str]) -> None:
    good = synthetic(1)
    assert good.dna is not None
    names = {
        "good": str(place / "manifest_0.json"),
        "fifo": str(place / "fifo.json"),
        "dir": str(place / "dir.json"),
        "empty": str(place / "empty.json"),
        "missing": str(place / "missing.json"),
        "out": str(place / "out.parquet"),
        "run": good.run_id,
        "dna": good.dna.value,
        "dna6": good.dna.value[:6],
    }
    args = [command, *(names.get(w[1:-1], w) if w.startswith("{") else w for w in words)]
    assume("--confirm" not in args)
    # execve cannot pass a NUL inside an argument: no command line holds one
    args = [word.replace("\x00", "") for word in args]
    check(place, args)


GENERATE_WORDS = st.one_of(
    HOSTILE_TEXT,
    st.sampled_from(
        ["--output", "-o", "{fifo}", "{dir}", "{out}", "--record", "--json", "--data", "--"]
    ),
    st.text(max_size=8),
)


@settings(SETTINGS, max_examples=20)
@given(words=st.lists(GENERATE_WORDS, max_size=4))
def test_generated_arguments_to_generate(place: Path, words: list[str]) -> None:
    names = {"fifo": str(place / "fifo.json"), "dir": str(place / "dir.json"), "out": "g.json"}
    args = [names.get(w[1:-1], w) if w.startswith("{") else w for w in words]
    check(place, ["generate", "--deadline", "20", *(w.replace("\x00", "") for w in args)])
