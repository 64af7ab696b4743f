"""``rerun``: a reviewable shell script for a recorded run, or the run itself after a check.

The script is text for a person: what the code must be (commented, never acted on), the
recorded environment as ``export`` lines and the recorded argv, every word quoted. Nothing
here installs a package or touches git; ``--confirm`` only runs the recorded argv.

A manifest may come from anyone, so its text is data, never script: every manifest-derived
value in a comment has its control characters written as escapes (a newline cannot end the
comment), every word is quoted (``$'...'`` with ``\\xNN`` where a byte is not printable
ASCII, so an ANSI escape stays an escape and the argv stays byte-exact), and the
environment is applied only where the collector would have collected the name and the
variable does not change what code loads (:data:`LOADER_VARIABLES`): those are shown,
commented out, for a person to set.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from expdna.compare.check import CheckReport, check_live
from expdna.compare.command_check import argv_disagreements, command_in_dna
from expdna.compare.env_policy import is_applied, not_applied_reason
from expdna.compare.relaunch import SCRIPT_INTERPRETER, Relaunch, plan
from expdna.errors import ExpdnaError, InvalidInputError, RefusedError
from expdna.manifest.display import printable
from expdna.manifest.dna import compute_dna, short
from expdna.manifest.dna import verify_dna as recompute
from expdna.manifest.escape import is_escaped, to_bytes, to_os_str
from expdna.manifest.model import Manifest, Repo

#: Substrings that redaction leaves in a value it replaced (DESIGN.md "Redaction").
REDACTION_MARKS: tuple[str, ...] = ("***", "<HOME>", "<internal-address>", "<internal-host>")
_SHELL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PATCH_PREFIX = "#| "


def applied_env(manifest: Manifest) -> dict[str, str]:
    """The recorded variables ``--confirm`` applies: those on the allow-list
    (:mod:`expdna.compare.env_policy`).

    Raises :class:`InvalidInputError` for a name no environment can hold (``=``, NUL) and
    for a value holding NUL.
    """
    applied: dict[str, str] = {}
    for name, value in manifest.config.selected_env.items():
        key = to_os_str(name)
        if not key or "=" in key or "\x00" in key:
            raise InvalidInputError(
                f"config.selected_env: {_one_line(repr(name))} is not an environment "
                "variable name (empty, or holds '=' or NUL)"
            )
        if not is_applied(key):
            continue
        text = to_os_str(expand_home(value))  # `~`: the recording user's home is ours
        if "\x00" in text:
            raise InvalidInputError(f"config.selected_env.{key}: the value holds a NUL character")
        applied[key] = text
    return applied


def not_applied_env(manifest: Manifest) -> list[str]:
    """The recorded variable names ``--confirm`` leaves out, in the manifest's order."""
    return [name for name in manifest.config.selected_env if not is_applied(name)]


class LaunchError(ExpdnaError):
    """The recorded program could not be started; 127 as a shell says "command not found"."""

    exit_code = 127


@dataclass(frozen=True)
class RedactedInput:
    """One input of the command whose recorded value was redacted."""

    path: str  # dotted path in the manifest, e.g. "command.argv.3"
    label: str  # as shown to people: "argv[3]", "env HF_TOKEN"
    value: str


def _listed(redacted: set[str], path: str) -> bool:
    head, _, index = path.rpartition(".")
    # Accept both spellings of a list index: "command.argv.3" and "command.argv[3]".
    return path in redacted or (index.isdigit() and f"{head}[{index}]" in redacted)


def _is_redacted(value: str, path: str, redacted: set[str]) -> bool:
    return _listed(redacted, path) or any(mark in value for mark in REDACTION_MARKS)


def redacted_inputs(manifest: Manifest) -> list[RedactedInput]:
    """The argv words and applied environment values that must be filled in by hand."""
    listed = set(manifest.collection.redacted)
    found = [
        RedactedInput(f"command.argv.{i}", f"argv[{i}]", word)
        for i, word in enumerate(manifest.command.argv)
        if _is_redacted(word, f"command.argv.{i}", listed)
    ]
    found += [  # a variable --confirm does not apply is no input of the rerun
        RedactedInput(f"config.selected_env.{name}", f"env {name}", value)
        for name, value in manifest.config.selected_env.items()
        if is_applied(name) and _is_redacted(value, f"config.selected_env.{name}", listed)
    ]
    return found


# Redaction writes the recording user's own home as `~` (a word's start, or after `=` or
# `:` as in `--out=~/x` and `PATH=~/bin:~/.local/bin`); on this user's machine it is ours.
_HOME_TILDE = re.compile(r"(?:^|(?<=[=:\s]))~(?=/|:|$|\s)")


def expand_home(word: str) -> str:
    """``word`` with a recorded ``~`` replaced by this user's home directory."""
    if "~" not in word or is_escaped(word):
        return word
    home = str(Path.home())
    return _HOME_TILDE.sub(lambda _: home, word)


def _home_word(word: str) -> str:
    """``word`` quoted for a shell, a recorded ``~`` left for the shell to expand."""
    if "~" not in word or is_escaped(word) or not _HOME_TILDE.search(word):
        return shell_word(word)
    parts = _HOME_TILDE.split(word)
    return '"$HOME"'.join(shell_word(part) if part else "" for part in parts)


def _one_line(text: str) -> str:
    """``text`` safe inside a ``#`` comment: a newline would end the comment early."""
    return printable(text)


def _repo_lines(name: str, repo: Repo) -> list[str]:
    at = repo.commit or "(no commit recorded)"
    where = f"(branch {repo.branch})" if repo.branch else "(detached)" if repo.detached else ""
    if repo.patch is not None:
        below = " below" if repo.patch.text else ""
        state = f"dirty: patch {_one_line(repo.patch.digest)}{below}"
    else:
        state = {True: "dirty, no patch recorded", False: "clean", None: "state unknown"}[
            repo.dirty
        ]
    lines = [f"# expected: {_one_line(name)} at {_one_line(at)} {_one_line(where)}, {state}"]
    if repo.remote:
        lines.append(f"#   remote: {_one_line(repo.remote)}")
    lines += [
        f"#   submodule {_one_line(s.path)} at {_one_line(s.commit or '(unknown)')}"
        for s in repo.submodules
    ]
    if repo.patch is not None:
        lines += _patch_lines(name, repo)
    return lines


def _patch_lines(name: str, repo: Repo) -> list[str]:
    assert repo.patch is not None
    patch = repo.patch
    safe = _one_line(name)
    lines = [f"#   patch {_one_line(patch.digest)}, {patch.size} bytes, against the commit above"]
    if patch.binary_files:
        lines.append(
            "#   binary files not in the patch text: "
            + ", ".join(_one_line(f"{b.path} ({b.digest})") for b in patch.binary_files)
        )
    if not patch.text:
        reason = (
            "truncated: take it from the store by its digest"
            if patch.truncated
            else "not inline in this manifest"
        )
        return [*lines, f"#   (patch text {reason})"]
    if patch.truncated:
        lines.append("#   (patch text truncated in the manifest: the full one is in the store)")
    if any(mark in patch.text for mark in REDACTION_MARKS):
        lines.append("#   (the patch was redacted when recorded: restore marked values by hand)")
    body = patch.text[:-1] if patch.text.endswith("\n") else patch.text
    shown = [_patch_line(line) for line in body.split("\n")]
    if any(line is None for line in shown):
        lines.append(
            "#   (the patch holds control characters, written below as escapes: take the "
            "exact patch from the store by its digest)"
        )
    # A distinct prefix, so the patch can be cut back out (sh ends a comment only at \n).
    script = f"/^# begin patch {_bre(safe)}$/,/^# end patch {_bre(safe)}$/s/^#| //p"
    lines.append(f"#   to extract: sed -n {_one_line(shlex.quote(script))}")
    lines.append(f"# begin patch {safe}")
    lines += [
        _PATCH_PREFIX + (line if line is not None else _one_line(raw))
        for line, raw in zip(shown, body.split("\n"), strict=True)
    ]
    lines.append(f"# end patch {safe}")
    return lines


def _patch_line(line: str) -> str | None:
    """A patch line as it is, or None when it holds a control character other than a tab
    or the carriage return that ends a CRLF line (an ANSI escape or a carriage return
    mid-line could hide text from the person reviewing)."""
    body = line[:-1] if line.endswith("\r") else line
    return None if any(not ch.isprintable() and ch != "\t" for ch in body) else line


def _bre(text: str) -> str:
    """``text`` matched literally inside a sed basic regular expression."""
    return "".join("\\" + ch if ch in ".[]*^$\\/" else ch for ch in text)


def needs_ansi_c(word: str) -> bool:
    """Whether :func:`shell_word` writes ``word`` as ``$'...'``: a word in the escaped form,
    or one holding a control character other than newline and tab (an ANSI escape, a
    carriage return), which a terminal would act on and ``click`` strips from a pipe. A
    newline or a tab is written as it is: inside single quotes it cannot end anything."""
    return is_escaped(word) or any(not ch.isprintable() and ch not in "\n\t" for ch in word)


def shell_word(word: str) -> str:
    """``word`` quoted for a POSIX shell, byte-exact for a word in the escaped form.

    A word recorded as ``bytes:...`` (not valid UTF-8 when recorded), or holding a
    character that is not printable (a newline, an ANSI escape), is written as ``$'...'``
    with ``\\xNN`` for every byte outside printable ASCII, which bash, zsh and ksh read
    back as the original bytes; and the script itself holds no control character.
    """
    if not needs_ansi_c(word):
        return shlex.quote(word)
    parts = []
    for byte in to_bytes(word):
        char = chr(byte)
        if 0x20 <= byte < 0x7F and char not in "\\'":
            parts.append(char)
        else:
            parts.append(f"\\x{byte:02x}")
    return "$'" + "".join(parts) + "'"


def _command_lines(manifest: Manifest, launch: Relaunch, listed: set[str]) -> list[str]:
    """The rebuilt command, with the lines a person must read before it."""
    out: list[str] = []
    if launch.needs_interpreter:
        out.append(
            "# The run recorded its script without an interpreter (sys.argv, as an older "
            f"hook records it): {SCRIPT_INTERPRETER} is assumed."
        )
    rendezvous = {r.index: r for r in launch.rendezvous}
    if rendezvous:
        out.append("# Per-allocation rendezvous values: set these for the allocation you run in.")
        for r in launch.rendezvous:
            shown = _one_line(shlex.quote(r.recorded))
            out.append(f"#   {r.variable}: {_one_line(r.option)} (recorded: {shown})")
        names = dict.fromkeys(r.variable for r in launch.rendezvous)
        out += [f': "${{{name}:?set {name} for this allocation}}"' for name in names]
    for i, word in enumerate(manifest.command.argv):
        if i not in rendezvous and _is_redacted(word, f"command.argv.{i}", listed):
            out.append(
                f"# FILL IN BY HAND: argv[{i}] ({_one_line(shlex.quote(word))}) "
                "was redacted when recorded"
            )
    words = [shell_word(SCRIPT_INTERPRETER)] if launch.needs_interpreter else []
    for i, word in enumerate(manifest.command.argv):
        value = rendezvous.get(i)
        if value is None:
            words.append(_home_word(word))
        elif value.attached:
            words.append(f'{shell_word(value.option + "=")}"${value.variable}"')
        else:
            words.append(f'"${value.variable}"')
    out.append(" ".join(words))
    return out


def _edited_lines(manifest: Manifest) -> list[str]:
    """A warning when the content no longer hashes to the stored DNA: the reviewer must not
    take that DNA for the script's (``--confirm`` refuses such a manifest)."""
    if manifest.dna is None:
        return []  # the header shows the content's own DNA
    try:
        computed = recompute(manifest).value
    except ValueError:
        return ["# EDITED: its DNA version is unknown here; rerun --confirm refuses it."]
    if computed == manifest.dna.value:
        return []
    return [
        f"# EDITED: the content hashes to {short(computed)}, not to the dna above: the "
        "manifest was changed after it was written; rerun --confirm refuses it."
    ]


def render_script(manifest: Manifest) -> str:
    """The POSIX shell script that would rerun ``manifest``, for a person to review."""
    listed = set(manifest.collection.redacted)
    dna = manifest.dna.value if manifest.dna else compute_dna(manifest).value
    words = [*manifest.command.argv, *manifest.config.selected_env.values()]
    # $'...' is read by bash, zsh and ksh, not by every /bin/sh (dash)
    shell = "#!/bin/bash" if any(needs_ansi_c(word) for word in words) else "#!/bin/sh"
    out = [
        shell,
        "# expdna rerun script: review it and fill in what is marked before running it.",
        "# It installs nothing and changes no git state: set up the code below by hand.",
        f"# run:          {_one_line(manifest.run_id)}",
        f"# dna:          {short(dna)}",
        *_edited_lines(manifest),
        f"# generated_at: {_one_line(manifest.generated_at)}",
        "#",
    ]
    if manifest.code:
        out.append("# Code the run used (check it out and apply the patch yourself):")
        for name, repo in manifest.code.items():
            out += _repo_lines(name, repo)
    else:
        out.append("# No code was recorded: rerun --confirm refuses to run this command.")
    out.append("#")
    if manifest.command.cwd:
        out.append("# Working directory of the original run:")
        out.append(f"# cd {_one_line(_home_word(manifest.command.cwd))}")
        if "<HOME>" in manifest.command.cwd:
            out.append("#   (<HOME> stands for the recording user's home directory)")
    for name, value in manifest.config.selected_env.items():
        if not _SHELL_NAME.match(name):
            out.append(f"# skipped: {_one_line(repr(name))} is not a shell variable name")
            continue
        line = f"export {name}={_home_word(value)}"
        why = not_applied_reason(name)
        if why is not None:
            out.append(f"# NOT APPLIED: {name} is in the manifest, but {why}; set it by hand")
            out.append(f"#   only if you trust it: {_one_line(line)}")
            continue
        if _is_redacted(value, f"config.selected_env.{name}", listed):
            out.append(f"# FILL IN BY HAND: {name} was redacted when recorded")
        out.append(line)
    if not manifest.command.argv:
        out.append("# No command was recorded: there is no command to rerun.")
        return "\n".join(out) + "\n"
    if not command_in_dna(manifest):
        version = manifest.dna.version if manifest.dna else "(none)"
        out.append(
            f"# The command is outside this manifest's DNA (version {version}): "
            "rerun --confirm needs --trust-command."
        )
    out += _command_lines(manifest, plan(manifest.command.argv), listed)
    return "\n".join(out) + "\n"


def refusal_reasons(
    manifest: Manifest, report: CheckReport, *, trust_command: bool = False
) -> list[str]:
    """Why ``--confirm`` must not run ``manifest`` after ``report``; empty when it may.

    One reason per line: each FAIL, then the command's trust, then redacted inputs."""
    # --trust-command answers for the command words the DNA does not cover, and no more.
    trusted = trust_command and not command_in_dna(manifest)
    reasons = [
        f"{r.field}: {r.note}" if r.note else f"check FAILs on {r.field}"
        for r in report.failures()
        if not (trusted and r.rule == "command")
    ]
    if not command_in_dna(manifest) and not trust_command:
        version = manifest.dna.version if manifest.dna else "(none)"
        reasons.append(
            f"command.argv: DNA version {version} does not cover the command; "
            "give --trust-command to run it as recorded"
        )
    launch = plan(manifest.command.argv)
    values = {f"command.argv.{r.index}" for r in launch.rendezvous}
    redacted = [r for r in redacted_inputs(manifest) if r.path not in values]
    if redacted:
        reasons.append(
            "redacted values must be filled in by hand: "
            + ", ".join(r.label for r in redacted)
            + " (see rerun --dry-run)"
        )
    missing = launch.missing(os.environ)
    if missing:
        reasons.append(
            "per-allocation rendezvous values: set "
            + ", ".join(missing)
            + " for this allocation (see rerun --dry-run)"
        )
    return reasons


def trusted_command_line(manifest: Manifest) -> str | None:
    """What ``--trust-command`` trusts, in words, for stderr; None where the DNA covers
    the command and there is nothing to trust."""
    if command_in_dna(manifest):
        return None
    version = manifest.dna.version if manifest.dna else "(none)"
    words = " ".join(shell_word(word) for word in manifest.command.argv)
    line = (
        f"rerun: --trust-command: running command.argv as recorded, which DNA version "
        f"{version} does not cover: {_one_line(words)}"
    )
    found = argv_disagreements(manifest)
    if found:
        line += f" (trusted although it does not match config.resolved_args: {found[0]}"
        line += f", and {len(found) - 1} more)" if len(found) > 1 else ")"
    return _one_line(line)


def _wait(proc: subprocess.Popen[bytes]) -> int:
    # Ctrl-C reaches the child through the terminal's process group; the child decides
    # what it means, as under a shell, and its exit status is what we report.
    if threading.current_thread() is not threading.main_thread():
        return proc.wait()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return proc.wait()
    finally:
        signal.signal(signal.SIGINT, previous)


def run_recorded(
    manifest: Manifest,
    *,
    cwd: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """Run the rebuilt command (no shell) with the allowed recorded variables over ours.

    No timeout: this is the training run itself, as long as it takes.
    """
    if not manifest.command.argv:
        raise RefusedError("no command was recorded: there is nothing to rerun")
    base = os.environ if environ is None else environ
    launch = plan(manifest.command.argv)
    missing = launch.missing(base)
    if missing:
        raise RefusedError(f"set {', '.join(missing)} for this allocation first")
    # Words recorded in the escaped form get their original bytes back; `~` is our home.
    argv = [to_os_str(expand_home(word)) for word in launch.resolved(base)]
    for i, word in enumerate(argv):
        if "\x00" in word:
            raise InvalidInputError(f"command.argv.{i}: holds a NUL character")
    env = {**base, **applied_env(manifest)}
    try:
        proc = subprocess.Popen(argv, env=env, cwd=cwd)
    except OSError as exc:
        raise LaunchError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
    with proc:
        return _wait(proc)


def rerun_confirmed(
    manifest: Manifest,
    *,
    cwd: str | os.PathLike[str] | None = None,
    repos: Iterable[str | os.PathLike[str]] = (),
    report: CheckReport | None = None,
    trust_command: bool = False,
    data: bool = True,
) -> int:
    """Check ``manifest`` here, refuse on a FAIL, an untrusted command or a redacted input,
    else run it.

    Returns the command's exit status; raises :class:`RefusedError` naming every reason.
    """
    if not manifest.command.argv:
        raise RefusedError("no command was recorded: there is nothing to rerun")
    verify_dna(manifest)
    applied_env(manifest)  # a bad name is refused before the check runs anything
    if report is None:
        report = check_live(manifest, cwd=cwd, repos=repos, data=data)
    reasons = refusal_reasons(manifest, report, trust_command=trust_command)
    if reasons:
        raise RefusedError("\n".join(f"refusing to rerun: {r}" for r in reasons))
    return run_recorded(manifest, cwd=cwd)


def verify_dna(manifest: Manifest) -> None:
    """Refuse (exit 2) a manifest without a DNA or whose content no longer hashes to it
    (recomputed in the version it names, so older manifests still verify)."""
    from expdna.store.errors import DnaMismatchError

    if manifest.dna is None:
        raise DnaMismatchError(f"run {manifest.run_id}: no dna.value to verify the manifest by")
    try:
        computed = recompute(manifest).value
    except ValueError as exc:
        raise DnaMismatchError(f"run {manifest.run_id}: {exc}") from None
    if computed != manifest.dna.value:
        raise DnaMismatchError(
            f"run {manifest.run_id}: dna.value {short(manifest.dna.value)} does not match the "
            f"DNA of its content ({short(computed)}): the manifest was corrupted or edited"
        )
