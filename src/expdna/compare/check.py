"""``check``: a recorded manifest against another one, usually the live environment.

The engine is a registry of small rules. Each rule reads the two manifests and yields
findings; :func:`check_manifest` runs them in order and tags each finding with its rule's
name. Conventions every rule keeps, so the output reads the same everywhere:

- a field not recorded (``None``) is not checked: there is nothing to compare with;
- a field recorded but unknown now is ``WARN`` with ``current=None`` (shown "(unknown)");
- a thing that is known not to exist now is named by a marker (``(absent)``, ``(none)``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expdna.compare import versions
from expdna.compare.command_check import rule_command
from expdna.compare.entry import entry_findings
from expdna.compare.findings import ABSENT as ABSENT
from expdna.compare.findings import STATUSES as STATUSES
from expdna.compare.findings import Finding as Finding
from expdna.compare.findings import Status as Status
from expdna.compare.inputs import config_findings, data_findings
from expdna.compare.repos import live_tops, match_repos
from expdna.manifest.dna import compute_dna, verify_dna
from expdna.manifest.model import Manifest, Repo

#: Markers for facts that are not values: the thing is known to be clean.
CLEAN = "(clean)"
DIRTY_NO_PATCH = "(dirty, no patch)"
NO_GPU = "(none)"
#: Sections the live collection fills for a check (argv, config and data are the run's own).
LIVE_SECTIONS = frozenset({"code", "environment", "hardware"})
#: Collecting is not on a training run's critical path here: give slow repos time.
LIVE_DEADLINE_S = 30.0
#: Packages with a rule of their own; the generic package rule leaves them alone.
_OWN_RULE_PACKAGES = frozenset({"torch"})


@dataclass(frozen=True)
class CheckResult:
    rule: str
    field: str
    status: Status
    recorded: str | None
    current: str | None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "field": self.field,
            "status": self.status,
            "recorded": self.recorded,
            "current": self.current,
            "note": self.note,
        }


@dataclass(frozen=True)
class CheckReport:
    results: tuple[CheckResult, ...]

    @property
    def verdict(self) -> Status:
        found = {r.status for r in self.results}
        return next((s for s in STATUSES if s in found), "PASS")

    def counts(self) -> dict[Status, int]:
        return {s: sum(r.status == s for r in self.results) for s in STATUSES}

    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "FAIL"]

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "results": [r.to_dict() for r in self.results]}


Rule = Callable[[Manifest, Manifest], Iterable[Finding]]


@dataclass
class RuleSet:
    """Rules by name, run in insertion order. An object, so callers can build their own."""

    rules: dict[str, Rule] = field(default_factory=dict)

    def add(self, name: str, rule: Rule) -> None:
        if name in self.rules:
            raise ValueError(f"check rule {name!r} is registered twice")
        self.rules[name] = rule

    def register(self, name: str) -> Callable[[Rule], Rule]:
        def decorator(rule: Rule) -> Rule:
            self.add(name, rule)
            return rule

        return decorator


Judge = Callable[[str, str], Status]


def _compare(name: str, recorded: object, current: object, judge: Judge) -> Iterator[Finding]:
    """The shared convention: not recorded -> no finding; unknown now -> WARN."""
    if recorded is None:
        return
    old = str(recorded)
    if current is None:
        yield Finding(name, "WARN", old, None)
        return
    new = str(current)
    yield Finding(name, judge(old, new), old, new)


def _differs(status: Status) -> Judge:
    return lambda old, new: "PASS" if old == new else status


def _by_release(old: str, new: str) -> Status:
    """Same major, other minor: WARN; other major: FAIL; a patch release: PASS."""
    step = versions.change(old, new)
    if step in ("same", "patch"):
        return "PASS"
    return "FAIL" if step == "major" else "WARN"


def _by_major(old: str, new: str) -> Status:
    """Any other version WARNs; another major FAILs."""
    step = versions.change(old, new)
    if step == "same":
        return "PASS"
    return "FAIL" if step == "major" else "WARN"


def _collector_lost(current: Manifest, collector: str) -> bool:
    """True when ``collector`` produced nothing now, so an empty section means "unknown"."""
    status = current.collection.collectors.get(collector)
    return status is not None and status.status in ("failed", "timeout")


def _live_repo(recorded: Manifest, current: Manifest, name: str) -> Repo | None:
    """The live repository that plays ``name``'s part (see :mod:`expdna.compare.repos`)."""
    live = match_repos(recorded.code, current.code).get(name)
    return current.code[live] if live is not None else None


def rule_dna(recorded: Manifest, current: Manifest) -> Iterator[Finding]:
    """The stored DNA against the one its content gives: a mismatch is an edited manifest.

    The stored DNA is recomputed in its own version, so a manifest written by an older
    expdna (DNA version 1) still verifies."""
    if recorded.dna is None:
        actual = compute_dna(recorded).value
        yield Finding("dna", "WARN", None, actual, "the manifest carries no DNA to verify")
        return
    try:
        actual = verify_dna(recorded).value
    except ValueError as exc:
        yield Finding("dna", "FAIL", recorded.dna.value, None, str(exc))
        return
    if recorded.dna.value != actual:
        yield Finding("dna", "FAIL", recorded.dna.value, actual, "edited after it was written")


def rule_collected(recorded: Manifest, current: Manifest) -> Iterator[Finding]:
    """A manifest that recorded none of what check compares cannot pass: nothing was checked."""
    doc = recorded.to_dict()
    if not any(_has_leaf(doc.get(name)) for name in LIVE_SECTIONS):
        empty = ", ".join(sorted(LIVE_SECTIONS))
        yield Finding("sections", "WARN", None, None, f"nothing recorded to check ({empty})")


def rule_unknown(recorded: Manifest, current: Manifest) -> Iterator[Finding]:
    """A section the run could not collect was never known: nothing here can match it."""
    for section, reason in (recorded.unknown or {}).items():
        yield Finding(f"unknown.{section}", "WARN", None, None, f"not collected: {reason}")


def _has_leaf(value: Any) -> bool:
    """A value other than ``None`` somewhere inside (empty containers hold none)."""
    if isinstance(value, dict):
        return any(_has_leaf(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_leaf(v) for v in value)
    return value is not None


def rule_commit(recorded: Manifest, current: Manifest) -> Iterator[Finding]:
    for name, repo in recorded.code.items():
        live = _live_repo(recorded, current, name)
        where = f"code.{name}.commit"
        if live is None and repo.commit is not None:
            # A repo git could not describe now is unknown; one git did not find is absent.
            lost = _collector_lost(current, "git")
            yield Finding(where, "WARN" if lost else "FAIL", repo.commit, None if lost else ABSENT)
            continue
        yield from _compare(where, repo.commit, live.commit if live else None, _differs("FAIL"))


def _patch_value(repo: Repo) -> str | None:
    if repo.patch is not None:
        return repo.patch.digest
    return {True: DIRTY_NO_PATCH, False: CLEAN, None: None}[repo.dirty]


def _by_patch(old: str, new: str) -> Status:
    if old == new and old != DIRTY_NO_PATCH:
        return "PASS"
    if CLEAN in (old, new):
        return "FAIL"  # one side clean, the other dirty: certainly other code
    # A dirty tree whose patch is unknown cannot be compared either way.
    return "WARN" if DIRTY_NO_PATCH in (old, new) else "FAIL"


def rule_patch(recorded: Manifest, current: Manifest) -> Iterator[Finding]:
    # Both digests name the redacted patch text (the live collection redacts too).
    for name, repo in recorded.code.items():
        live = _live_repo(recorded, current, name)
        if live is None:
            continue  # the commit rule already reports the repository as missing
        yield from _compare(
            f"code.{name}.patch.digest", _patch_value(repo), _patch_value(live), _by_patch
        )


def rule_python(recorded: Manifest, current: Manifest) -> Iterator[Finding]:
    yield from _compare(
        "environment.python_version",
        recorded.environment.python_version,
        current.environment.python_version,
        _by_release,
    )


def _package(current: Manifest, name: str) -> str | None:
    found = current.environment.packages.get(name)
    if found is None and not _collector_lost(current, "environment"):
        return ABSENT
    return found


def rule_torch(recorded: Manifest, current: Manifest) -> Iterator[Finding]:
    # Without torch (or with another major) a PyTorch run does not rerun: both FAIL.
    old = recorded.environment.packages.get("torch")
    yield from _compare(
        "environment.packages.torch",
        old,
        _package(current, "torch"),
        lambda a, b: "FAIL" if b == ABSENT else _by_major(a, b),
    )


def rule_packages(recorded: Manifest, current: Manifest) -> Iterator[Finding]:
    for name, version in recorded.environment.packages.items():
        if name in _OWN_RULE_PACKAGES:
            continue
        yield from _compare(
            f"environment.packages.{name}", version, _package(current, name), _differs("WARN")
        )


def rule_gpu_model(recorded: Manifest, current: Manifest) -> Iterator[Finding]:
    live = current.hardware.gpu_model
    if live is None and current.hardware.gpu_count == 0:
        live = NO_GPU  # known to have no GPU, not merely unknown
    yield from _compare("hardware.gpu_model", recorded.hardware.gpu_model, live, _differs("FAIL"))


def rule_vbios(recorded: Manifest, current: Manifest) -> Iterator[Finding]:
    # GPUs are matched by index: the collector lists them in the driver's order.
    live = current.hardware.gpus
    for i, gpu in enumerate(recorded.hardware.gpus):
        now = live[i].vbios_version if i < len(live) else None
        yield from _compare(
            f"hardware.gpus.{i}.vbios_version", gpu.vbios_version, now, _same_text("WARN")
        )


def _same_text(status: Status) -> Judge:
    # Windows drivers print VBIOS versions in lower case, Linux ones in upper case.
    return lambda old, new: "PASS" if old.casefold() == new.casefold() else status


def rule_compute_capability(recorded: Manifest, current: Manifest) -> Iterator[Finding]:
    # Kernels built for one compute capability (sm_90) do not run on another (sm_80).
    live = current.hardware.gpus
    for i, gpu in enumerate(recorded.hardware.gpus):
        old = getattr(gpu, "compute_capability", None)
        now = getattr(live[i], "compute_capability", None) if i < len(live) else None
        yield from _compare(f"hardware.gpus.{i}.compute_capability", old, now, _differs("FAIL"))


def _hardware_field(name: str, judge: Judge) -> Rule:
    def rule(recorded: Manifest, current: Manifest) -> Iterator[Finding]:
        yield from _compare(
            f"hardware.{name}",
            getattr(recorded.hardware, name, None),
            getattr(current.hardware, name, None),
            judge,
        )

    return rule


def default_rules() -> RuleSet:
    """The built-in rules, in the order their results are shown."""
    rules = RuleSet()
    rules.add("dna", rule_dna)
    rules.add("command", rule_command)
    rules.add("collected", rule_collected)
    rules.add("unknown", rule_unknown)
    rules.add("commit", rule_commit)
    rules.add("patch", rule_patch)
    rules.add("python", rule_python)
    rules.add("torch", rule_torch)
    rules.add("packages", rule_packages)
    rules.add("gpu_model", rule_gpu_model)
    rules.add("driver", _hardware_field("driver_version", _differs("WARN")))
    rules.add("vbios", rule_vbios)
    rules.add("compute_capability", rule_compute_capability)
    rules.add("gpu_count", _hardware_field("gpu_count", _differs("WARN")))
    rules.add("cuda", _hardware_field("cuda_version", _by_release))
    rules.add("cudnn", _hardware_field("cudnn_version", _differs("WARN")))
    rules.add("nccl", _hardware_field("nccl_version", _differs("WARN")))
    return rules


def check_manifest(
    recorded: Manifest, current: Manifest, *, rules: RuleSet | None = None
) -> CheckReport:
    """Every rule's findings for ``recorded`` against ``current``; pure, no I/O."""
    chosen = rules if rules is not None else default_rules()
    results = [
        CheckResult(rule=name, **finding._asdict())
        for name, rule in chosen.rules.items()
        for finding in rule(recorded, current)
    ]
    return CheckReport(tuple(results))


def collect_live(
    *,
    cwd: str | os.PathLike[str] | None = None,
    repos: Iterable[str | os.PathLike[str]] = (),
    deadline_s: float = LIVE_DEADLINE_S,
) -> Manifest:
    """The live code, environment and hardware, collected as ``generate`` would."""
    # Imported here: collecting pulls in every collector, which pure callers never need.
    from expdna.api import collect
    from expdna.collectors import default_registry

    registry = default_registry()
    names = [n for n, c in registry.collectors.items() if c.section in LIVE_SECTIONS]
    return collect(cwd=cwd, repos=repos, collectors=names, registry=registry, deadline_s=deadline_s)


@dataclass(frozen=True)
class LiveContext:
    """What the live rules read besides the two manifests: where things are here."""

    cwd: Path
    #: ``{live repository name: top level}`` (see :func:`expdna.compare.repos.live_tops`).
    tops: Mapping[str, Path]
    #: Whether recorded datasets are re-digested (``check --no-data`` turns it off).
    data: bool = True


LiveRule = Callable[[Manifest, Manifest, LiveContext], Iterable[Finding]]


def _live_entry(recorded: Manifest, current: Manifest, ctx: LiveContext) -> Iterable[Finding]:
    return entry_findings(recorded, current, ctx.cwd, ctx.tops)


def _live_config(recorded: Manifest, current: Manifest, ctx: LiveContext) -> Iterable[Finding]:
    return config_findings(recorded, current, ctx.tops)


def _live_data(recorded: Manifest, current: Manifest, ctx: LiveContext) -> Iterable[Finding]:
    return data_findings(recorded) if ctx.data else ()


#: Rules that look at this machine's files (the entry script, config files, datasets).
LIVE_RULES: dict[str, LiveRule] = {
    "entry": _live_entry,
    "config_files": _live_config,
    "data": _live_data,
}


def check_live(
    recorded: Manifest,
    *,
    cwd: str | os.PathLike[str] | None = None,
    repos: Iterable[str | os.PathLike[str]] = (),
    deadline_s: float = LIVE_DEADLINE_S,
    rules: RuleSet | None = None,
    data: bool = True,
) -> CheckReport:
    """``recorded`` against this machine: the repo containing ``cwd`` plus ``repos``, the
    command's entry, the config files and (``data``) the datasets it recorded."""
    where = Path(cwd) if cwd is not None else Path.cwd()
    repos = list(repos)
    current = collect_live(cwd=where, repos=repos, deadline_s=deadline_s)
    report = check_manifest(recorded, current, rules=rules)
    ctx = LiveContext(cwd=where, tops=live_tops(where, repos), data=data)
    live = [
        CheckResult(rule=name, **finding._asdict())
        for name, rule in LIVE_RULES.items()
        for finding in rule(recorded, current, ctx)
    ]
    return CheckReport(report.results + tuple(live))
