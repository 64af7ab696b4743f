"""The index tables (SQLAlchemy 2.x declarative). Rows never leave the store as ORM objects.

Every constraint and index is named through the metadata's naming convention, so alembic's
batch mode on SQLite can drop or alter them and PostgreSQL gets the same names.

Sizing (1M runs): a run is one ``runs`` row (~0.8 KB with its indexes), a link to the
fact set of each of its sections (~10 rows of two integers, kept in the primary key b-tree
on SQLite: ``WITHOUT ROWID``), its own facts (a few rows alike), the few values only it
holds (``fact_values``), its blob references and a few metrics. Fact sets are shared: a
new run adds members only for a section no earlier run had. Every query is an index
lookup or range scan: nothing reads all runs.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from expdna.manifest.lineage import RELATIONS

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: Values the ``kind`` column of ``blobs`` may take.
BLOB_KINDS = ("manifest", "patch", "listing", "packages")
LINEAGE_SOURCES = ("manifest", "link")

HEX64 = String(64)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Blob(Base):
    """An object in the object directory that the index knows about."""

    __tablename__ = "blobs"
    __table_args__ = (
        UniqueConstraint("digest", "algorithm"),
        CheckConstraint(_in("kind", BLOB_KINDS), name="kind"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(HEX64)
    algorithm: Mapped[str] = mapped_column(String(16))
    size: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(16))


class Run(Base):
    """One recorded run: its identity, its DNA and the fields people ask for, typed."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(128), unique=True)
    dna: Mapped[str] = mapped_column(HEX64, index=True)
    dna_version: Mapped[int] = mapped_column(Integer)
    code_digest: Mapped[str] = mapped_column(HEX64)
    config_digest: Mapped[str] = mapped_column(HEX64)
    training_digest: Mapped[str] = mapped_column(HEX64)
    environment_digest: Mapped[str] = mapped_column(HEX64)
    hardware_digest: Mapped[str] = mapped_column(HEX64)
    runtime_digest: Mapped[str] = mapped_column(HEX64)
    data_digest: Mapped[str] = mapped_column(HEX64)
    manifest_blob_id: Mapped[int] = mapped_column(ForeignKey("blobs.id"))
    schema_version: Mapped[str] = mapped_column(String(16))
    generated_at: Mapped[datetime] = mapped_column(DateTime, index=True)
    recorded_at: Mapped[datetime] = mapped_column(DateTime)
    commit: Mapped[str | None] = mapped_column(String(64))
    algorithm: Mapped[str | None] = mapped_column(Text)
    gpu_model: Mapped[str | None] = mapped_column(Text)
    driver_version: Mapped[str | None] = mapped_column(Text)
    cuda_version: Mapped[str | None] = mapped_column(Text)
    nccl_version: Mapped[str | None] = mapped_column(Text)
    python_version: Mapped[str | None] = mapped_column(Text)
    #: The DNA with every seed projected out (expdna.manifest.family); NULL for runs
    #: recorded before it existed until ``expdna db upgrade`` fills it in.
    family: Mapped[str | None] = mapped_column(HEX64, index=True)
    #: Code, config, training and data with seeds pooled (expdna.manifest.family.setup_of):
    #: the runs of one experiment on any machine. NULL until ``expdna db upgrade`` fills it.
    setup: Mapped[str | None] = mapped_column(HEX64, index=True)
    #: DNA sections a collector could not finish, comma-separated; NULL when complete.
    unknown: Mapped[str | None] = mapped_column(Text)
    #: ``status.state`` (running, completed, failed, interrupted); NULL for runs recorded
    #: before status existed (unknown). A ``status`` log entry updates it.
    state: Mapped[str | None] = mapped_column(String(16), index=True)


class FactPath(Base):
    """Flattened manifest paths, interned: ``hardware.gpus.vbios_version`` -> a small id."""

    __tablename__ = "fact_paths"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    path: Mapped[str] = mapped_column(Text, unique=True)


class FactValue(Base):
    """One (path, value) pair, interned: every run holding it shares this id."""

    __tablename__ = "fact_values"
    __table_args__ = (UniqueConstraint("path_id", "value"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    path_id: Mapped[int] = mapped_column(ForeignKey("fact_paths.id"))
    value: Mapped[str] = mapped_column(Text)


class Fact(Base):
    """A run's own facts (expdna.store.record.factsets: the leaves that name the run, metrics,
    collection notes): the key (value id, run) is the lookup index. The rest of a run's
    facts are in the fact sets it links to (``run_fact_sets``).

    Two integers a row: interning values halves the index and the cost of recording
    against (path, text, run) rows. No foreign keys: facts are written only with their run
    in one transaction, and checking two parents per row cost a third of the time.
    """

    __tablename__ = "facts"
    __table_args__ = (
        PrimaryKeyConstraint("value_id", "run_pk"),
        # a run's own facts (expdna explain reads them per run): the key reversed
        Index(None, "run_pk", "value_id"),
        {"sqlite_with_rowid": False},
    )

    value_id: Mapped[int] = mapped_column(Integer)
    run_pk: Mapped[int] = mapped_column(Integer)


class FactSet(Base):
    """A section's shared facts (expdna.store.record.factsets), stored once for every run holding
    them; ``digest`` is BLAKE3 of its sorted (path, value) pairs."""

    __tablename__ = "fact_sets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(HEX64, unique=True)


class FactSetMember(Base):
    """Which (path, value) a fact set holds: the key (value id, set) is the lookup index.

    No foreign keys, as for ``facts``: a set's members are written with the set, once.
    """

    __tablename__ = "fact_set_members"
    __table_args__ = (
        PrimaryKeyConstraint("value_id", "set_id"),
        # a set's members (expdna explain): the key reversed
        Index(None, "set_id", "value_id"),
        {"sqlite_with_rowid": False},
    )

    value_id: Mapped[int] = mapped_column(Integer)
    set_id: Mapped[int] = mapped_column(Integer)


class RunFactSet(Base):
    """Which runs hold a fact set: the key (set, run) answers a set's runs in one range."""

    __tablename__ = "run_fact_sets"
    __table_args__ = (
        PrimaryKeyConstraint("set_id", "run_pk"),
        # a run's sets (expdna explain): the key reversed
        Index(None, "run_pk", "set_id"),
        {"sqlite_with_rowid": False},
    )

    set_id: Mapped[int] = mapped_column(Integer)
    run_pk: Mapped[int] = mapped_column(Integer)


class RunBlob(Base):
    """Which blobs a run references (its manifest, patches, listings), for fsck and gc."""

    __tablename__ = "run_blobs"
    __table_args__ = (
        PrimaryKeyConstraint("run_pk", "blob_id"),
        {"sqlite_with_rowid": False},
    )

    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    blob_id: Mapped[int] = mapped_column(ForeignKey("blobs.id"))


class Metric(Base):
    """Final numeric metrics a run reported (``metrics`` section, flattened names)."""

    __tablename__ = "metrics"
    __table_args__ = (
        PrimaryKeyConstraint("run_pk", "name"),
        {"sqlite_with_rowid": False},
    )

    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    name: Mapped[str] = mapped_column(Text)
    value: Mapped[float] = mapped_column(Double)


class Pin(Base):
    """A checkpoint's BLAKE3 digest (never the file) bound to a run, its DNA and a name."""

    __tablename__ = "pins"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    dna: Mapped[str] = mapped_column(HEX64)
    digest: Mapped[str] = mapped_column(HEX64, index=True)
    algorithm: Mapped[str] = mapped_column(String(16))
    name: Mapped[str | None] = mapped_column(Text, index=True)
    path: Mapped[str | None] = mapped_column(Text)
    size: Mapped[int | None] = mapped_column(BigInteger)
    pinned_at: Mapped[datetime] = mapped_column(DateTime)


#: The unique key of a lineage edge (an edge is recorded once, whichever source saw it first).
LINEAGE_KEY = ("parent_run_id", "child_run_id", "relation")


class Lineage(Base):
    """child <relation> parent. Run ids, not keys: a child may be recorded before its parent."""

    __tablename__ = "lineage"
    __table_args__ = (
        UniqueConstraint("parent_run_id", "child_run_id", "relation"),
        CheckConstraint(_in("relation", RELATIONS), name="relation"),
        CheckConstraint(_in("source", LINEAGE_SOURCES), name="source"),
        Index(None, "child_run_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    parent_run_id: Mapped[str] = mapped_column(String(128))
    child_run_id: Mapped[str] = mapped_column(String(128))
    relation: Mapped[str] = mapped_column(String(32))
    source: Mapped[str] = mapped_column(String(16))
    recorded_at: Mapped[datetime] = mapped_column(DateTime)


#: Section name -> the ``runs`` column holding its digest.
SECTION_COLUMNS = {
    "code": Run.code_digest,
    "config": Run.config_digest,
    "training": Run.training_digest,
    "environment": Run.environment_digest,
    "hardware": Run.hardware_digest,
    "runtime": Run.runtime_digest,
    "data": Run.data_digest,
}


class StoreMeta(Base):
    """Facts about the index itself; ``store_id``: the id of the object directory whose
    objects this index describes (expdna.store.identity)."""

    __tablename__ = "store_meta"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class StoreLogEntry(Base):
    """A log entry of the object directory (expdna.store.objects.log) whose facts this
    index holds: written in the transaction that applies it, so an entry without a row is
    one the index is behind on."""

    __tablename__ = "store_log"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
