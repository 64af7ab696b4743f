"""``expdna pin`` / ``expdna which``, and ``diff`` / ``check`` reading runs from the store,
through the installed command on a real SQLite store and on the real PostgreSQL server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from expdna.cli import cli as cli_group
from expdna.store import Store
from tests.factories import EXPDNA, collide_prefix, rows, synthetic


def expdna(
    store: Path, *args: str, index_url: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EXPDNA_STORE": str(store), "EXPDNA_CACHE_DIR": str(store / "cache")}
    env.pop("EXPDNA_INDEX_URL", None)
    if index_url is not None:
        env["EXPDNA_INDEX_URL"] = index_url
    return subprocess.run(
        [EXPDNA, *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd
    )


def cli(store: Path, *args: str, index_url: str | None = None) -> Result:
    """The same command in-process (click's runner): faster, for the variations."""
    options = ["--store", str(store)] + (["--index-url", index_url] if index_url else [])
    return CliRunner().invoke(
        cli_group,
        [*options, *args],
        env={"EXPDNA_CACHE_DIR": str(store / "cache"), "EXPDNA_INDEX_URL": None},
    )


def _record(root: Path, index_url: str | None = None) -> list[str]:
    manifests = [synthetic(i, setup=i // 2) for i in range(4)]
    with Store.open(root, index_url) as store:
        store.record_many(manifests)
    return [m.run_id for m in manifests]


def _pin_and_which(root: Path, tmp_path: Path, index_url: str | None = None) -> None:
    runs = _record(root, index_url)
    checkpoint = tmp_path / "vit_best.pth"
    checkpoint.write_bytes(os.urandom(4096))
    pinned = expdna(
        root, "pin", str(checkpoint), "--run", runs[1], "--name", "best", index_url=index_url
    )
    assert pinned.returncode == 0, pinned.stderr
    assert pinned.stdout.startswith("pinned best  blake3:") and runs[1] in pinned.stdout
    # the same bytes, pinned by another run under another name
    twin = tmp_path / "copy_for_eval.pth"
    shutil.copy(checkpoint, twin)
    again = cli(root, "pin", str(twin), "--run", runs[3], "--json", index_url=index_url)
    assert again.exit_code == 0, again.output
    assert rows(again.stdout)[0]["name"] == "copy_for_eval.pth"

    renamed = checkpoint.rename(tmp_path / "renamed.pth")
    found = expdna(root, "which", str(renamed), "--json", index_url=index_url)
    assert found.returncode == 0, found.stderr
    answer: list[dict[str, Any]] = rows(found.stdout)
    assert [(a["run_id"], a["name"], a["matches"]) for a in answer] == [
        (runs[3], "copy_for_eval.pth", True),
        (runs[1], "best", True),
    ]
    assert {"run_id", "dna", "name", "matches", "generated_at"} <= answer[0].keys()
    assert (
        answer[1]["dna"]
        == json.loads(cli(root, "show", runs[1], "--json", index_url=index_url).stdout)[0]["dna"]
    )

    by_name = cli(root, "which", "best", index_url=index_url)
    assert by_name.exit_code == 0, by_name.output
    header, line = by_name.stdout.splitlines()
    assert header.split() == ["RUN", "DNA", "NAME", "MATCHES", "PINNED"]
    assert line.split()[:4] == [runs[1], answer[1]["dna"][:12], "best", "-"]  # moved away
    assert (
        rows(cli(root, "which", "best", "--json", index_url=index_url).stdout)[0]["matches"] is None
    )

    missing = cli(root, "which", "no-such-checkpoint", index_url=index_url)
    assert missing.exit_code == 1 and missing.stdout == ""
    assert missing.stderr.strip() == (
        "expdna: error: not found: no recorded run pinned 'no-such-checkpoint'"
    )
    unpinned = tmp_path / "unpinned.pt"
    unpinned.write_bytes(b"never pinned")
    said = cli(root, "which", str(unpinned), index_url=index_url)
    assert said.exit_code == 1 and said.stderr.strip().endswith(
        f"(pin it to the run that made it: expdna pin --run RUN {unpinned})"
    )


def test_pin_and_which_through_the_installed_command(tmp_path: Path) -> None:
    _pin_and_which(tmp_path / "store", tmp_path)


@pytest.mark.postgres
def test_pin_and_which_on_postgres(pg_url: str, tmp_path: Path) -> None:
    assert cli(tmp_path / "store", "db", "upgrade", index_url=pg_url).exit_code == 0
    _pin_and_which(tmp_path / "store", tmp_path, pg_url)


def test_pin_and_which_errors(tmp_path: Path) -> None:
    root = tmp_path / "store"
    runs = _record(root)
    checkpoint = tmp_path / "a.pt"
    checkpoint.write_bytes(b"w")
    unknown = cli(root, "pin", str(checkpoint), "--run", "20990101_000000_nogit_x")
    assert unknown.exit_code == 1 and "no recorded run" in unknown.stderr
    for args in (
        ("pin", str(tmp_path / "absent.pt"), "--run", runs[0]),  # no such file
        ("pin", str(tmp_path), "--run", runs[0]),  # a directory
        ("pin", str(checkpoint)),  # --run missing
        ("pin", str(checkpoint), "--run", "../x"),
        ("pin", str(checkpoint), "--run", runs[0], "--name", ""),
        ("which", str(tmp_path)),
        ("which", "blake3:../../etc/passwd"),
        ("which", ""),  # no name, as pin refuses it
        ("which", str(checkpoint), "  "),
    ):
        result = cli(root, *args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output
    with Store.open(root) as store:
        assert store.which(str(checkpoint)) == []  # nothing was written


def test_which_takes_several_checkpoints_and_never_cuts_a_name(tmp_path: Path) -> None:
    from expdna.integrations.checkpoints import checkpoint_name

    root = tmp_path / "store"
    runs = _record(root)[::2]  # two DNAs
    dnas = [rows(cli(root, "show", r, "--json").stdout)[0]["dna"] for r in runs]
    names = [checkpoint_name("vit_base_patch16_224", d, "epoch10", "pt") for d in dnas]
    paths = []
    for run_id, name in zip(runs, names, strict=False):
        path = tmp_path / name
        path.write_bytes(os.urandom(64))
        assert cli(root, "pin", str(path), "--run", run_id).exit_code == 0
        paths.append(str(path))
    both = cli(root, "which", *paths)  # what a shell makes of `ckpt/*.pt`
    assert both.exit_code == 0, both.output
    assert [ln for ln in both.stdout.splitlines() if ln.endswith(":")] == [p + ":" for p in paths]
    for name in names:  # 48 characters, whole
        assert f" {name} " in both.stdout
    listed = rows(cli(root, "which", *paths, "--json").stdout)
    assert [(r["target"], r["name"]) for r in listed] == list(zip(paths, names, strict=True))
    some = cli(root, "which", paths[0], "no-such-checkpoint")
    assert some.exit_code == 1
    assert "no-such-checkpoint: no recorded run pinned it" in some.stdout
    assert names[0] in some.stdout


# --- diff and check by run id or DNA prefix ---------------------------------------------


def test_diff_and_check_read_runs_from_the_store(tmp_path: Path) -> None:
    root = tmp_path / "store"
    runs = _record(root)
    with Store.open(root) as store:
        dna = store.get(runs[0]).dna
        other = store.get(runs[2]).dna
        store.show(runs[0], inline=True)
    same = expdna(root, "diff", runs[0], dna[:6])  # run 1 is the newest run of that DNA
    assert same.returncode == 0, same.stderr
    assert same.stdout.splitlines()[-1] == f"dna: {dna[:12]} (equal)"
    differ = cli(root, "diff", runs[0], other[:8], "--json")
    assert differ.exit_code == 1, differ.output
    report = json.loads(differ.stdout)
    assert report["dna"] == [dna, other]
    # a file and a run mix; a path that exists is always the file
    exported = tmp_path / runs[2]
    exported.write_text(cli(root, "show", runs[2], "--inline").stdout)
    mixed = expdna(root, "diff", runs[2], runs[2], cwd=tmp_path)
    assert mixed.returncode == 0, mixed.stderr
    checked = expdna(root, "check", dna[:6], "--json")
    assert checked.returncode in (0, 1), checked.stderr
    results = {r["field"]: r for r in json.loads(checked.stdout)["results"]}
    assert results["code.train.commit"]["recorded"] == synthetic(1, setup=0).code["train"].commit


def test_store_references_that_do_not_resolve(tmp_path: Path) -> None:
    root = tmp_path / "store"
    runs = _record(root)
    unknown = expdna(root, "diff", runs[0], "20990101_000000_nogit_x")
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == (
        "expdna: error: 20990101_000000_nogit_x: no such file; "
        "no recorded run '20990101_000000_nogit_x'"
    )
    assert cli(root, "check", "ffffff0").exit_code == 1
    assert cli(root, "diff", runs[0], "missing.json").exit_code == 2  # a file name
    assert cli(root, "check", "a/b").exit_code == 2
    nowhere = cli(tmp_path / "no-store", "diff", "abcdef", runs[0])
    assert nowhere.exit_code == 2 and f"no store at {tmp_path / 'no-store'}" in nowhere.stderr
    nowhere = cli(tmp_path / "no-store", "check", runs[0])
    assert nowhere.exit_code == 2 and f"no store at {tmp_path / 'no-store'}" in nowhere.stderr
    assert not (tmp_path / "no-store").exists()  # looking did not create a store
    with Store.open(root) as store:
        first = store.get(runs[0])
        crafted = collide_prefix(store, runs[2], first.dna)
    ambiguous = cli(root, "diff", first.dna[:6], runs[0])
    assert ambiguous.exit_code == 2
    assert "ambiguous" in ambiguous.stderr and crafted[:12] in ambiguous.stderr
    assert "Traceback" not in ambiguous.stderr
