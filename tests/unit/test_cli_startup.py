"""The lazy command group: ``--help`` and ``--version`` load no command, and the listing
``--help`` prints from :data:`expdna.cli.COMMANDS` says what the commands themselves say.
A read-only query loads only what it uses (benchmarks/cli_bench.py times them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from expdna.cli import COMMANDS, cli, load_command
from expdna.store import Store
from tests.factories import dna, record_docs, synthetic_doc
from tests.fleets import nccl_fleet, record_fleet

HEAVY = ("sqlalchemy", "pydantic", "expdna.store.facade", "expdna.manifest.model", "starlette")
#: What ``expdna twins RUN`` must not load: the manifest model, migrations, the record
#: pipeline, the collectors and the comparison code are for other commands.
NOT_FOR_QUERIES = (
    "pydantic",
    "expdna.manifest.model",
    "expdna.manifest.dna",
    "alembic",
    "expdna.store.record.prepare",
    "expdna.store.record.recorder",
    "expdna.store.record.write",
    "expdna.collectors",
    "expdna.compare",
)
#: On a local SQLite index, every read command needs the standard library's sqlite3 alone.
NOT_FOR_LOCAL_QUERIES = (*NOT_FOR_QUERIES, "sqlalchemy")


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_no_store_and_no_model(flag: str) -> None:
    code = (
        "import sys\n"
        "from expdna.cli import cli\n"
        "try:\n"
        f"    cli([{flag!r}], prog_name='expdna')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip()  # the version or the help was printed
    assert done.stderr.strip() == ""


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_listed_summary_is_the_commands_own(name: str) -> None:
    command = load_command(name)
    assert command.name == name
    stand_in = click.Command(name, help=COMMANDS[name][1])
    for limit in (45, 60, 72, 500):
        assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit)


def test_help_lists_every_command_as_an_eager_group_would() -> None:
    eager = click.Group("expdna", params=cli.params, help=cli.help)
    for name in COMMANDS:
        eager.add_command(load_command(name), name)
    # Both as `expdna --help` makes them (-h too): click keeps a command's help option.
    with click.Context(cli, info_name="expdna", **cli.context_settings) as lazy_ctx:
        lazy = cli.get_help(lazy_ctx)
    with click.Context(eager, info_name="expdna", **cli.context_settings) as eager_ctx:
        assert lazy == eager.get_help(eager_ctx)


def _every_command(command: click.Command, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    found = [path]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            found += _every_command(sub, (*path, name))
    return found


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_prints_a_percent_sign_once(name: str) -> None:
    # click formats no help text with %: a printf-style "N%%" reaches the reader doubled
    for path in _every_command(load_command(name), (name,)):
        done = CliRunner().invoke(cli, [*path, "--help"], prog_name="expdna")
        assert done.exit_code == 0, done.output
        assert "%%" not in done.output, (path, done.output)


def _loaded_by(
    args: list[str], store: Path, names: tuple[str, ...], *, any_exit: bool = False
) -> tuple[str, list[str]]:
    """Run ``expdna ARGS`` in a child process; its output and which of ``names`` it loaded
    (``any_exit``: a negative answer, exit 1, counts as well)."""
    code = (
        "import sys\n"
        "from expdna.cli import cli\n"
        "try:\n"
        f"    cli({args!r}, prog_name='expdna')\n"
        "except SystemExit as exc:\n"
        f"    assert {any_exit!r} or not exc.code, exc.code\n"
        f"loaded = [m for m in {names!r} if m in sys.modules]\n"
        "print('loaded:' + ','.join(loaded), file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    env["EXPDNA_STORE"] = str(store)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    # the last line that says so: the command's own words come before it
    last = [line for line in done.stderr.splitlines() if line.startswith("loaded:")][-1]
    return done.stdout, [name for name in last.removeprefix("loaded:").split(",") if name]


def test_twins_of_a_run_loads_no_model_no_migrations_and_no_recorder(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    with Store.open(store_dir) as store:
        first, _ = record_docs(store, synthetic_doc(0), synthetic_doc(1))
        run_id = first.run_id
    for args in (["twins", run_id], ["twins", dna(first)[:8], "--json"]):
        out, loaded = _loaded_by(args, store_dir, NOT_FOR_LOCAL_QUERIES)
        assert run_id in out
        assert loaded == []
        # Through SQLAlchemy (any --index-url), still no model, migrations or recorder.
        url = ["--index-url", f"sqlite:///{store_dir / 'index.sqlite'}"]
        out, loaded = _loaded_by([*url, *args], store_dir, NOT_FOR_QUERIES)
        assert run_id in out
        assert loaded == []


def test_every_read_command_on_a_local_index_loads_no_sqlalchemy(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    with Store.open(store_dir) as store:
        first, _ = record_docs(store, synthetic_doc(0), synthetic_doc(1))
        store.pin(run_id=first.run_id, digest="ab" * 32, name="best.pt")
    run_id = first.run_id
    reads = [
        ["show", run_id],
        ["show", run_id, "--json"],
        ["runs"],
        ["find", "--driver", "535.104.05", "--where", "training.algorithm=grpo"],
        ["which", "best.pt"],
        ["lineage", run_id],
        ["stability", run_id],
        ["db", "current"],
        ["fsck"],
        ["export", "--parquet", str(tmp_path / "runs.parquet")],
    ]
    for args in reads:
        _, loaded = _loaded_by(args, store_dir, (*NOT_FOR_LOCAL_QUERIES, "pyarrow", "numpy"))
        assert loaded == [], args
    assert (tmp_path / "runs.parquet").stat().st_size > 0  # export wrote Parquet, without pyarrow


def test_explain_on_a_local_index_loads_no_sqlalchemy(tmp_path: Path) -> None:
    # The fleet is read in bulk through the read layer; only numpy and scipy come in.
    store_dir = tmp_path / "store"
    with Store.open(store_dir) as store:
        record_docs(store, *(synthetic_doc(i) for i in range(4)))
    args = ["explain", "--status", "failed", "--where", "training.algorithm=grpo", "--json"]
    out, loaded = _loaded_by(args, store_dir, ("sqlalchemy", "alembic"), any_exit=True)
    assert '"runs": 4' in out  # it read the fleet
    assert loaded == []


def test_explain_loads_numpy_with_one_blas_thread_and_leaves_the_environment_alone() -> None:
    code = (
        "import os, sys\n"
        "from expdna.explain import load_numpy\n"
        "assert 'numpy' not in sys.modules\n"
        "load_numpy()\n"
        "print('numpy' in sys.modules, os.environ.get('OPENBLAS_NUM_THREADS'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.split() == ["True", "None"]
    # a count the user set is theirs
    env["OPENBLAS_NUM_THREADS"] = "2"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.split() == ["False", "2"]


def test_explain_past_exact_enumeration_loads_no_scipy(tmp_path: Path) -> None:
    # 40 runs: every field splits them too many ways to enumerate, so each is tested on
    # the shared permutations, in numpy; SciPy is only for the exact test of a small fleet
    store_dir = tmp_path / "store"
    docs = nccl_fleet()
    with Store.open(store_dir) as store:
        record_fleet(store, docs)
    args = ["explain", "--metric", "final_loss", "--same-setup", docs[0]["run_id"], "--json"]
    out, loaded = _loaded_by(args, store_dir, ("scipy", "sqlalchemy"))
    assert '"permutation (' in out and "hardware.nccl_version" in out
    assert loaded == []
