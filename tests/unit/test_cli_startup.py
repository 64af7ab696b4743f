"""The lazy command group: ``--help`` and ``--version`` load no command, and the listing
``--help`` prints from :data:`expdna.cli.COMMANDS` says what the commands themselves say."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from expdna.cli import COMMANDS, cli, load_command

HEAVY = ("sqlalchemy", "pydantic", "expdna.store.facade", "expdna.manifest.model")


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
