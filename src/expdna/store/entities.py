"""What the store hands out: plain dataclasses, never ORM rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from expdna.digest.refs import ref

RecordStatus = Literal["recorded", "skipped", "conflict", "failed"]


def iso(moment: datetime | None) -> str | None:
    """UTC time as the manifest writes it: ``2026-08-05T14:30:25Z`` (fractions kept)."""
    if moment is None:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    text = moment.isoformat(timespec="microseconds" if moment.microsecond else "seconds")
    return text + "Z"


@dataclass(frozen=True)
class RunSummary:
    """One run as listings show it."""

    run_id: str
    dna: str
    generated_at: datetime
    recorded_at: datetime
    commit: str | None = None
    algorithm: str | None = None
    gpu_model: str | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    nccl_version: str | None = None
    python_version: str | None = None
    #: The DNA with every seed projected out; None for runs recorded before it existed.
    family: str | None = None
    #: DNA sections a collector could not finish, comma-separated; None when complete.
    unknown: str | None = None
    #: ``status.state``; None for a run recorded before status existed (unknown).
    state: str | None = None

    @property
    def unknown_sections(self) -> list[str]:
        return self.unknown.split(",") if self.unknown else []

    @property
    def shown_state(self) -> str:
        """The state as listings show it: ``unknown`` (recorded before status existed),
        ``unfinished`` (still ``running`` past the age limit), or the state itself."""
        from expdna.manifest.status import shown_state

        return shown_state(self.state, self.generated_at)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "dna": self.dna,
            "generated_at": iso(self.generated_at),
            "recorded_at": iso(self.recorded_at),
            "commit": self.commit,
            "algorithm": self.algorithm,
            "gpu_model": self.gpu_model,
            "driver_version": self.driver_version,
            "cuda_version": self.cuda_version,
            "nccl_version": self.nccl_version,
            "python_version": self.python_version,
            "family": self.family,
            "unknown": self.unknown_sections,
            "state": self.state,
            "unfinished": self.shown_state == "unfinished",
        }


@dataclass(frozen=True)
class RunRecord(RunSummary):
    """One run with its DNA sections and the digest of its stored manifest."""

    dna_version: int = 1
    schema_version: str = ""
    sections: dict[str, str] = field(default_factory=dict)
    manifest_digest: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            **super().to_dict(),
            "dna_version": self.dna_version,
            "schema_version": self.schema_version,
            "sections": dict(self.sections),
            "manifest_digest": ref(self.manifest_digest),
        }


@dataclass(frozen=True)
class RecordResult:
    """What recording one manifest did. ``skipped``: already recorded with the same content."""

    run_id: str
    dna: str | None
    generated_at: str | None
    status: RecordStatus
    source: str | None = None
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "dna": self.dna,
            "generated_at": self.generated_at,
            "status": self.status,
            "source": self.source,
            "message": self.message,
        }


@dataclass(frozen=True)
class FsckReport:
    objects: int
    runs: int
    problems: list[str]
    unreferenced: int
    temp_files: int
    #: log entries the index has not applied yet, young enough to be a recorder at work
    pending: int = 0
    #: runs still ``running`` past the age limit (expdna.manifest.status): not problems,
    #: most often processes that died without a word
    unfinished: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class ReindexReport:
    """What ``reindex`` rebuilt: runs, log entries replayed, manifests adopted (recorded
    before the log existed), and what could not be applied (named)."""

    runs: int
    entries: int
    adopted: int
    problems: list[str]
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "entries": self.entries,
            "adopted": self.adopted,
            "problems": list(self.problems),
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class GcReport:
    removed: list[str]
    removed_bytes: int
    temp_files: list[str]
    kept_young: int
    dry_run: bool
    #: entries at object paths that are not regular files: left alone, named
    irregular: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PinRecord:
    """A checkpoint's digest bound to a run: what ``pin`` returns and ``which`` answers.

    ``matches``: whether the file on disk still has ``digest`` (always true when the file
    itself was the question; None when the pinned path no longer exists or was not asked).
    """

    run_id: str
    dna: str
    digest: str
    name: str | None
    path: str | None
    size: int | None
    pinned_at: datetime
    generated_at: datetime | None = None
    matches: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "dna": self.dna,
            "name": self.name,
            "matches": self.matches,
            "digest": ref(self.digest),
            "path": self.path,
            "size": self.size,
            "pinned_at": iso(self.pinned_at),
            "generated_at": iso(self.generated_at),
        }


@dataclass(frozen=True)
class LineageEdge:
    """``child`` <relation> ``parent``, as reached from the run asked about.

    ``run_id`` is the related run (the parent for an ancestor, the child for a
    descendant); ``dna``/``generated_at`` are None when that run is not recorded (yet).
    """

    direction: Literal["ancestor", "descendant"]
    depth: int
    relation: str
    parent: str
    child: str
    source: str
    run_id: str
    dna: str | None = None
    generated_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "dna": self.dna,
            "generated_at": iso(self.generated_at),
            "direction": self.direction,
            "depth": self.depth,
            "relation": self.relation,
            "parent": self.parent,
            "child": self.child,
            "source": self.source,
        }


@dataclass(frozen=True)
class LineageReport:
    run_id: str
    dna: str | None
    ancestors: list[LineageEdge]
    descendants: list[LineageEdge]
