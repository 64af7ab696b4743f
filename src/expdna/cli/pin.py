"""``expdna pin`` and ``expdna which``: checkpoints bound to the runs that made them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from expdna.cli.output import emit_json
from expdna.cli.params import GivenPath
from expdna.cli.store import StoreConfig, open_store, pass_config
from expdna.digest.refs import ref
from expdna.errors import InvalidInputError, NotFoundError
from expdna.manifest.display import short
from expdna.store.entities import PinRecord, iso

_MATCHES = {True: "yes", False: "NO (changed)", None: "-"}


def pin_table(found: Sequence[PinRecord]) -> list[str]:
    # Names are never cut: the DNA part of a checkpoint_name() is what tells them apart.
    width = max([24, *(len(pin.name or "-") for pin in found)])
    lines = [f"{'RUN':<30}  {'DNA':<12}  {'NAME':<{width}}  {'MATCHES':<12}  PINNED"]
    for pin in found:
        lines.append(
            f"{pin.run_id:<30}  {short(pin.dna):<12}  {pin.name or '-':<{width}}  "
            f"{_MATCHES[pin.matches]:<12}  {iso(pin.pinned_at)}"
        )
    return lines


@click.command("pin")
@click.argument(
    "checkpoint",
    type=GivenPath(path_type=Path, exists=True, dir_okay=False, readable=False),
    metavar="CHECKPOINT",
)
@click.option(
    "--run",
    "run",
    required=True,
    metavar="RUN",
    help="The run that made it: a run id or a DNA prefix (>= 6 hex).",
)
@click.option("--name", metavar="NAME", help="A name to find it by (default: the file name).")
@click.option("--json", "as_json", is_flag=True, help="Print the pin as a JSON array.")
@pass_config
def pin_command(
    config: StoreConfig,
    checkpoint: Path,
    run: str,
    name: str | None,
    as_json: bool,
) -> None:
    """Bind a checkpoint's BLAKE3 digest (not the file) and a name to a recorded run.

    `expdna which` then finds the run from the file (renamed or copied: by content) or
    from the name.
    """
    with open_store(config) as store:
        pin = store.pin_file(checkpoint, run=run, name=name)
    if as_json:
        emit_json([pin.to_dict()])
        return
    click.echo(
        f"pinned {pin.name}  {ref(short(pin.digest))}  ({pin.size} bytes)  to run "
        f"{pin.run_id}  dna {short(pin.dna)}"
    )


@click.command("which")
@click.argument("targets", metavar="CHECKPOINT|NAME...", nargs=-1, required=True)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print a JSON array, newest first per target: target, run_id, dna, name, matches, "
    "digest...",
)
@pass_config
@click.pass_context
def which_command(
    ctx: click.Context, config: StoreConfig, targets: tuple[str, ...], as_json: bool
) -> None:
    """Which run(s) made these checkpoints? A file is looked up by its content, so a renamed
    or copied checkpoint is found; anything else by pin name (or blake3:<hex>). Several
    files or names may be given (a shell glob: `expdna which ckpt/*.pt`).

    MATCHES says whether the file still holds the pinned bytes (the pinned path, when
    asked by name). Exit 1 when no run pinned one of them.
    """
    if any(not target.strip() for target in targets):
        raise InvalidInputError("which: an empty name names no checkpoint")
    with open_store(config, read_only=True) as store:
        found = {target: store.which(target) for target in dict.fromkeys(targets)}
    missing = [target for target, pins in found.items() if not pins]
    if len(found) == 1 and missing:
        hint = ""
        if Path(missing[0]).is_file():  # a checkpoint no run pinned: say how one is pinned
            hint = f" (pin it to the run that made it: expdna pin --run RUN {missing[0]})"
        raise NotFoundError(f"not found: no recorded run pinned {missing[0]!r}{hint}")
    if as_json:
        emit_json([{"target": t, **pin.to_dict()} for t, pins in found.items() for pin in pins])
    else:
        for target, pins in found.items():
            if len(found) > 1:
                click.echo(f"{target}:" if pins else f"{target}: no recorded run pinned it")
            for line in pin_table(pins) if pins else ():
                click.echo(line.rstrip())
    ctx.exit(1 if missing else 0)
