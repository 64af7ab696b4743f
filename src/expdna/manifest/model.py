"""The manifest, schema 1.x, as pydantic v2 models.

Every model keeps fields it does not know (``extra="allow"``), so a document written by a
newer 1.x tool survives a read/write round trip through this one. Values are facts or
``None``; words such as "not collected" belong to the CLI, not to the data.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from expdna.errors import InvalidInputError, quoted
from expdna.manifest.lineage import Relation
from expdna.manifest.runid import RUN_ID
from expdna.manifest.times import parse_time

#: 1.1 added ``unknown`` (sections a collector could not finish, part of the DNA).
SCHEMA_VERSION = "1.1"

#: A digest reference as manifests write it; anything else is refused when a manifest is read
#: (a digest is shown in rerun scripts and names objects, so it must be exactly this).
DigestRef = Annotated[str, Field(pattern=r"^blake3:[0-9a-f]{64}$")]

SectionName = Literal["code", "config", "training", "environment", "hardware", "runtime", "data"]
#: The sections that enter the DNA, in the order they are shown.
DNA_SECTIONS: tuple[SectionName, ...] = (
    "code",
    "config",
    "training",
    "environment",
    "hardware",
    "runtime",
    "data",
)


class _Open(BaseModel):
    """Base of every manifest model: unknown fields survive, assignment is validated."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, populate_by_name=True)


class Command(_Open):
    argv: list[str] = Field(default_factory=list, description="The command, redacted.")
    cwd: str | None = Field(None, description="Working directory, private paths redacted.")


class BinaryFile(_Open):
    path: str
    digest: DigestRef | None = Field(None, description="blake3:<hex> of the working-tree bytes.")
    size: int | None = None


class Patch(_Open):
    """Uncommitted work of one repository. The DNA uses ``digest``, never ``text``."""

    digest: DigestRef = Field(description="blake3:<hex> of the full patch text (UTF-8).")
    size: int = Field(description="Bytes of the full patch text.")
    text: str | None = Field(None, description="The patch inline; may be truncated.")
    truncated: bool = False
    binary_files: list[BinaryFile] = Field(default_factory=list)


class Submodule(_Open):
    path: str
    commit: str | None = Field(None, description="Commit recorded in the superproject.")
    checked_out: str | None = Field(None, description="Commit actually checked out.")
    state: str | None = None


class Repo(_Open):
    commit: str | None = None
    branch: str | None = None
    detached: bool | None = None
    dirty: bool | None = None
    remote: str | None = None
    shallow: bool | None = None
    patch: Patch | None = None
    submodules: list[Submodule] = Field(default_factory=list)


class ConfigFile(_Open):
    """One config file the run reads, keyed by its path in ``config.config_file_details``.

    Outside the DNA: the digest (also in ``config.config_files``) stands for the text,
    and the parsed values (``config.config_values``) repeat it.
    """

    name: str | None = Field(None, description="Short name, the key in config_values.")
    source: str | None = Field(None, description="argument, a flag (--config), or hydra.")
    format: str | None = None
    size: int | None = Field(None, description="Bytes of the file as read.")
    digest: str | None = Field(None, description="blake3:<hex> of the redacted text.")
    truncated: bool = Field(False, description="Over the text cap: digest only, no text.")
    text: str | None = Field(None, description="The redacted text inline (a blob in a store).")
    parse_error: str | None = Field(None, description="Why its values are not recorded.")
    unknown: str | None = Field(None, description="Why it could not be read at all.")


class Config(_Open):
    resolved_args: dict[str, Any] = Field(default_factory=dict)
    selected_env: dict[str, str] = Field(default_factory=dict)
    config_files: dict[str, DigestRef] = Field(
        default_factory=dict,
        description="Config file path -> blake3:<hex> of its redacted text (in the DNA).",
    )
    dna_ignore: list[str] = Field(
        default_factory=list,
        description="Extra glob patterns of dotted paths left out of the DNA.",
    )
    config_file_details: dict[str, ConfigFile] | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="Config file path -> what was read (outside the DNA).",
    )
    config_file_args: list[str] | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="Arguments whose value names a recorded config file (left out of the DNA: "
        "the file's digest stands for them).",
    )
    settings_source: str | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description='Where resolved_args came from: absent (or "argv") when parsed from the '
        'command line; "code" when the program handed them over in code (a dict, a Ray Tune '
        "trial): then DNA version 3 counts resolved_args and this marker.",
    )
    hydra: dict[str, Any] | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="A Hydra run's command-line overrides and config name (outside the DNA).",
    )
    config_values: dict[str, Any] | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="Parsed values of each config file, by its short name (outside the DNA).",
    )


class Training(_Open):
    algorithm: str | None = None
    parallel_topology: dict[str, int] = Field(default_factory=dict)
    global_batch_size: int | None = None
    micro_batch_size: int | None = None
    seeds: dict[str, Any] = Field(default_factory=dict)


class Environment(_Open):
    python_version: str | None = None
    python_implementation: str | None = None
    packages: dict[str, str] = Field(
        default_factory=dict, description="Key packages, name -> installed version."
    )
    packages_digest: DigestRef | None = Field(
        None, description="blake3:<hex> of the sorted listing of every installed distribution."
    )
    os: str | None = None
    kernel: str | None = None
    glibc: str | None = None


class Gpu(_Open):
    name: str | None = None
    memory_gb: float | None = None
    vbios_version: str | None = None
    uuid: str | None = None


class Hardware(_Open):
    gpus: list[Gpu] = Field(default_factory=list)
    gpu_model: str | None = None
    gpu_count: int | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    nccl_version: str | None = None
    cudnn_version: str | None = None
    cpu_model: str | None = None
    cpu_count: int | None = None
    memory_gb: float | None = None


class Node(_Open):
    role: str | None = None
    resources: dict[str, float] = Field(default_factory=dict)


class Runtime(_Open):
    mode: str | None = None
    node_count: int | None = None
    nodes: list[Node] = Field(default_factory=list)


class Dataset(_Open):
    root: str
    digest: DigestRef | None = Field(None, description="blake3:<hex> of the sorted file listing.")
    files: int | None = None
    bytes: int | None = None


class Data(_Open):
    datasets: list[Dataset] = Field(default_factory=list)


class CollectorStatus(_Open):
    status: Literal["ok", "partial", "failed", "timeout", "skipped"]
    duration_ms: float | None = None
    warnings: list[str] = Field(default_factory=list)


class Collection(_Open):
    collectors: dict[str, CollectorStatus] = Field(default_factory=dict)
    redacted: list[str] = Field(
        default_factory=list, description="Dotted paths whose value was redacted."
    )
    duration_ms: float | None = None


class Dna(_Open):
    version: int
    value: str = Field(pattern=r"^[0-9a-f]{64}$")
    sections: dict[str, str] = Field(default_factory=dict)


class Lineage(_Open):
    """This run's relation to an earlier run. Outside the DNA: it names runs, not a setup."""

    relation: Relation
    parent: str = Field(description="The run id of the earlier run.")


RunState = Literal["running", "completed", "failed", "interrupted"]
#: The states a run ends in; ``running`` is the state while it has not ended (or died).
END_STATES: tuple[RunState, ...] = ("completed", "failed", "interrupted")


class RunError(_Open):
    """The exception that ended a failed run, redacted."""

    type: str
    message: str


class RunStatus(_Open):
    """How the run ended (or that it has not yet). Outside the DNA: the same setup may crash
    once and succeed once; :mod:`expdna.manifest.status` makes it."""

    state: RunState
    exit_code: int | None = Field(None, description="The process's exit code, where known.")
    error: RunError | None = Field(None, description="The exception of a failed run.")
    signal: str | None = Field(None, description="The signal that interrupted it (SIGTERM).")
    started_at: str = Field(description="UTC, ISO 8601 (Z).")
    ended_at: str | None = None
    duration_s: float | None = None
    peak_rss_bytes: int | None = Field(None, description="Peak resident memory of the process.")
    host: str | None = Field(None, description="The host it ran on, redacted.")
    rank: int | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="The torch.distributed rank whose end this is, where not rank 0's: "
        "another rank that failed after rank 0 finished tells the store.",
    )


class Manifest(_Open):
    schema_version: str = SCHEMA_VERSION
    run_id: str
    generated_at: str
    command: Command = Field(default_factory=Command)
    code: dict[str, Repo] = Field(default_factory=dict)
    config: Config = Field(default_factory=Config)
    training: Training = Field(default_factory=Training)
    environment: Environment = Field(default_factory=Environment)
    hardware: Hardware = Field(default_factory=Hardware)
    runtime: Runtime = Field(default_factory=Runtime)
    data: Data = Field(default_factory=Data)
    metrics: dict[str, Any] = Field(default_factory=dict)
    lineage: list[Lineage] | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="Earlier runs this one resumes, reruns or derives from (not in the DNA).",
    )
    unknown: dict[SectionName, str] | None = Field(
        None,
        exclude_if=lambda value: not value,
        description=(
            "DNA sections a collector could not finish (failed or missed its deadline), "
            "with the reason. Being unknown is part of the section's DNA projection."
        ),
    )
    status: RunStatus | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="How the run ended (not in the DNA); absent in manifests written before "
        "it existed, which read as an unknown state.",
    )
    collection: Collection = Field(default_factory=Collection)
    dna: Dna | None = None

    # Every reader refuses what the store refuses: a manifest may come from anyone, and
    # check, rerun and diff print these two and name files after the run id.
    @field_validator("run_id")
    @classmethod
    def _usable_run_id(cls, value: str) -> str:
        if RUN_ID.fullmatch(value) is None:
            raise ValueError(
                f"run id {quoted(value)} is not usable (letters, digits, '._:+-', "
                "at most 128 characters)"
            )
        return value

    @field_validator("generated_at")
    @classmethod
    def _a_time(cls, value: str) -> str:
        try:
            parse_time(value, "generated_at")
        except InvalidInputError as exc:
            raise ValueError(str(exc).removeprefix("generated_at: ")) from None
        return value

    def to_dict(self) -> dict[str, Any]:
        """The document as plain dicts and lists, unknown fields included, ``None`` kept.

        Python mode, not JSON mode: pydantic's JSON mode turns NaN into ``null``, which
        would lose a fact; :mod:`expdna.manifest.canonical` writes the markers instead.
        """
        return self.model_dump(mode="python", by_alias=True)
