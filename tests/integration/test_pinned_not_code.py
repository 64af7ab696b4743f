"""A checkpoint pinned in the store is some run's output, not code: pinning ``ckpt.pt``
inside the checkout leaves the next run of the same command with the same DNA."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from expdna.cli import cli as cli_group
from expdna.store.config import StoreConfig
from expdna.store.deferred import LogWriter
from expdna.store.pinned_paths import pinned_paths
from tests.factories import git

PINNED = "left out as outputs: checkpoints pinned in the store"


def _cli(store: Path, *args: str) -> Any:
    result = CliRunner().invoke(
        cli_group,
        ["--store", str(store), *args],
        env={"EXPDNA_CACHE_DIR": str(store.parent / "cache"), "EXPDNA_INDEX_URL": None},
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in args else result.stdout


def _generate(store: Path, out: Path, *extra: str) -> dict[str, Any]:
    python = os.path.basename(sys.executable)
    info = _cli(store, "generate", *extra, "--json", "-o", str(out), "--", python, "train.py")
    return dict(json.loads(Path(info["path"]).read_text()))


def _notes(doc: dict[str, Any]) -> list[str]:
    return list(doc["collection"]["collectors"]["git"].get("notes", []))


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "train.py").write_text("print('train')\n")
    git(repo, "add", ".")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    monkeypatch.chdir(repo)
    return repo


def test_a_pinned_checkpoint_in_the_checkout_keeps_the_dna(checkout: Path, tmp_path: Path) -> None:
    store, out = tmp_path / "store", tmp_path / "out"
    out.mkdir()
    first = _generate(store, out / "a.json", "--record")
    (checkout / "ckpt.pt").write_bytes(os.urandom(4096))
    _cli(store, "pin", "ckpt.pt", "--run", first["run_id"])

    again = _generate(store, out / "b.json")
    assert again["dna"]["value"] == first["dna"]["value"]
    assert f"{PINNED} (1 file)" in _notes(again)

    # The same checkout judged against a store that pinned nothing: the file is code.
    elsewhere = _generate(tmp_path / "empty-store", out / "c.json")
    assert elsewhere["dna"]["value"] != first["dna"]["value"]
    assert elsewhere["code"]["proj"]["dirty"] is True
    assert not any(note.startswith(PINNED) for note in _notes(elsewhere))


def test_a_pin_the_training_process_left_pending_counts_too(checkout: Path, tmp_path: Path) -> None:
    store, out = tmp_path / "store", tmp_path / "out"
    out.mkdir()
    first = _generate(store, out / "a.json", "--record")
    (checkout / "ckpt").mkdir()
    best = checkout / "ckpt" / "best.pt"
    best.write_bytes(os.urandom(2048))
    # The hook's writer: a pending log entry, no index row until the next open.
    writer = LogWriter(StoreConfig(path=store))
    writer.pin(run_id=first["run_id"], digest="0" * 64, name="best.pt", path=str(best))
    assert str(best) in pinned_paths([store])

    again = _generate(store, out / "b.json")
    assert again["dna"]["value"] == first["dna"]["value"]
    assert f"{PINNED} (1 file)" in _notes(again)


def test_home_paths_are_found_as_the_store_writes_them(tmp_path: Path) -> None:
    # The store keeps a pinned path redacted, this user's home as "~".
    store = tmp_path / "store"
    (store / "objects").mkdir(parents=True)
    writer = LogWriter(StoreConfig(path=store))
    writer.pin(run_id="r", digest="0" * 64, name="x.pt", path="~/proj/x.pt")
    assert os.path.expanduser("~/proj/x.pt") in pinned_paths([store])
    assert pinned_paths([tmp_path / "no-store"]) == frozenset()


def test_the_hook_leaves_out_what_its_run_pinned(checkout: Path, tmp_path: Path) -> None:
    import expdna

    store, out = tmp_path / "store", tmp_path / "out"
    script = checkout / "train.py"

    def code_of(target: Path) -> tuple[str, list[str]]:
        run = expdna.start(store=str(target), output_dir=str(out), caller_file=script)
        assert run is not None and run.manifest is not None
        run.finish()
        assert run.manifest.dna is not None
        notes = run.manifest.to_dict()["collection"]["collectors"]["git"].get("notes", [])
        return run.manifest.dna.sections["code"], notes

    run = expdna.start(store=str(store), output_dir=str(out), caller_file=script)
    assert run is not None and run.manifest is not None and run.manifest.dna is not None
    before = run.manifest.dna.sections["code"]
    run.add_runtime()  # recorded now: a pin names a recorded run
    (checkout / "ckpt.pt").write_bytes(os.urandom(4096))
    assert run.pin(checkout / "ckpt.pt") is not None
    run.finish()

    after, notes = code_of(store)
    assert after == before
    assert f"{PINNED} (1 file)" in notes
    elsewhere, _ = code_of(tmp_path / "other-store")
    assert elsewhere != before


# --- a store whose index is PostgreSQL ----------------------------------------------------


def _pg_cli(store: Path, url: str, *args: str) -> Any:
    result = CliRunner().invoke(
        cli_group,
        ["--store", str(store), "--index-url", url, *args],
        env={"EXPDNA_CACHE_DIR": str(store.parent / "cache")},
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in args else result.stdout


_HOOK = """
import json, sys
import expdna

run = expdna.start(store=sys.argv[1], output_dir=sys.argv[2], caller_file=sys.argv[3])
run.finish()
doc = run.manifest.to_dict()
print(json.dumps({
    "code": run.manifest.dna.sections["code"],
    "notes": doc["collection"]["collectors"]["git"].get("notes", []),
    "sqlalchemy": [m for m in ("sqlalchemy", "psycopg") if m in sys.modules],
}))
"""


@pytest.mark.postgres
def test_pins_of_a_postgres_indexed_store_leave_the_code_too(
    checkout: Path, tmp_path: Path, pg_url: str
) -> None:
    """The training process asks no PostgreSQL server and loads no SQLAlchemy: the marks
    ``pin`` leaves beside the log say which checkpoints are pinned, for any index."""
    import shutil
    import subprocess

    from expdna.store.index.engine import open_index
    from expdna.store.index.migrate import upgrade

    store, out = tmp_path / "store", tmp_path / "out"
    out.mkdir()
    index = open_index(store, pg_url)
    upgrade(index)
    index.dispose()
    python = os.path.basename(sys.executable)
    info = _pg_cli(store, pg_url, "generate", "--record", "--json", "-o", str(out / "a.json"),
                   "--", python, "train.py")  # fmt: skip
    first = json.loads(Path(info["path"]).read_text())
    assert not (store / "expdna.sqlite").exists()  # the index is the server's
    (checkout / "ckpt.pt").write_bytes(os.urandom(4096))
    _pg_cli(store, pg_url, "pin", "ckpt.pt", "--run", first["run_id"])

    def generate(name: str) -> dict[str, Any]:
        info = _pg_cli(store, pg_url, "generate", "--json", "-o", str(out / name), "--",
                       python, "train.py")  # fmt: skip
        return dict(json.loads(Path(info["path"]).read_text()))

    again = generate("b.json")
    assert again["dna"]["value"] == first["dna"]["value"]
    assert f"{PINNED} (1 file)" in _notes(again)

    # the hook, in a training process of its own: same code section, nothing of SQL loaded
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    env |= {"EXPDNA_INDEX_URL": pg_url, "EXPDNA_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", _HOOK, str(store), str(out), str(checkout / "train.py")],
        cwd=checkout, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    hooked = json.loads(done.stdout.strip().splitlines()[-1])
    assert hooked["sqlalchemy"] == []
    assert f"{PINNED} (1 file)" in hooked["notes"]
    assert hooked["code"] == first["dna"]["sections"]["code"]

    # a store pinned before the marks existed: reindex marks its pins from the log
    shutil.rmtree(store / "objects" / "log" / "pinned")
    assert generate("c.json")["dna"]["value"] != first["dna"]["value"]
    _pg_cli(store, pg_url, "reindex")
    assert pinned_paths([store]) == frozenset({str(checkout / "ckpt.pt")})
    assert generate("d.json")["dna"]["value"] == first["dna"]["value"]


def test_marks_of_long_paths_and_a_hostile_marks_folder(tmp_path: Path) -> None:
    from expdna.store.objects.pinned import recorded, remember

    log_root = tmp_path / "objects" / "log"
    long = "/data/" + "checkpoints-of-a-very-long-experiment-name/" * 8 + "best.pt"
    for path in (long, "~/proj/ckpt.pt", "/tmp/ünï cødé.pt"):
        remember(log_root, path)
        remember(log_root, path)  # again: nothing changes
    assert sorted(recorded(log_root)) == sorted([long, "~/proj/ckpt.pt", "/tmp/ünï cødé.pt"])
    assert len(list((log_root / "pinned").iterdir())) == 3
    os.mkfifo(log_root / "pinned" / ("h-" + "0" * 64))  # never blocks the training start
    (log_root / "pinned" / "p-!!not base64").write_text("")
    assert len(recorded(log_root)) == 3
    assert recorded(tmp_path / "nowhere") == []
