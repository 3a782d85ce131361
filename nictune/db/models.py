"""SQLAlchemy models of nictune's history: testbeds, configurations, jobs, trials.

The schema is portable between SQLite and PostgreSQL: JSON columns use
``sqlalchemy.JSON`` (through :class:`~nictune.db.types.SafeJSON`) and timestamps are
timezone-aware UTC (:class:`~nictune.db.types.UTCDateTime`). The tables are created by
the Alembic migrations in ``nictune/db/migrations``, never by ``create_all``; a test
checks that the two agree.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.ext.mutable import MutableDict, MutableList
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from nictune.db.types import SafeJSON, UTCDateTime, utcnow
from nictune.errors import InvalidInputError

# Explicit constraint names, so migrations can refer to them on every backend.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class JobState(enum.StrEnum):
    """Life cycle of a job."""

    PENDING = "pending"
    RUNNING = "running"
    #: Running, but its pool has no live worker: the measurement waits for one.
    WAITING = "waiting"
    INTERRUPTED = "interrupted"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @classmethod
    def parse(cls, state: str) -> JobState:
        """The state named ``state``.

        Raises:
            InvalidInputError: not a state (field ``state``, the states allowed).
        """
        try:
            return cls(state)
        except ValueError:
            allowed = ", ".join(member.value for member in cls)
            raise InvalidInputError(f"unknown job state {state!r}; job states: {allowed}", field="state",
                                    allowed=allowed) from None


class TrialState(enum.StrEnum):
    """Life cycle of one trial (one configuration measured ``repeats`` times)."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class TrialSource(enum.StrEnum):
    """Where a completed trial's numbers came from."""

    MEASURED = "measured"
    CACHE = "cache"


TESTBED_KINDS: tuple[str, ...] = ("sim", "veth", "ssh")
"""Kinds of testbed: the simulated model, a local veth pair, a real pair over ssh."""

MAIN_METRICS: tuple[str, ...] = (
    "throughput_gbps",
    "loss_pct",
    "interrupts_per_gb",
    "cpu_rx_pct",
    "packet_rate_mpps",
)
"""Metrics that also get a real float column on :class:`Measurement` and :class:`Trial`
(for SQL queries), and sums in :data:`config_stats`."""


def _in(values: tuple[str, ...] | type[enum.StrEnum]) -> str:
    return ", ".join(f"'{value}'" for value in values)


class Base(DeclarativeBase):
    """Declarative base with the naming convention and nictune's column types."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {  # noqa: RUF012 - SQLAlchemy reads this class attribute
        datetime: UTCDateTime,
        dict[str, Any]: SafeJSON,
        list[str]: SafeJSON,
        list[Any]: SafeJSON,
    }


class Testbed(Base):
    """A pair of hosts (or the simulated model) identified by its fingerprint."""

    __tablename__ = "testbeds"
    __table_args__ = (CheckConstraint(f"kind IN ({_in(TESTBED_KINDS)})", name="kind"),)
    __test__ = False  # the name starts with "Test": keep pytest from collecting it

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(16))
    fingerprint: Mapped[dict[str, Any]]
    fingerprint_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    def __repr__(self) -> str:
        return f"Testbed(id={self.id!r}, name={self.name!r}, kind={self.kind!r})"


class Configuration(Base):
    """One point of a search space in canonical form; ``hash`` is the cache key."""

    __tablename__ = "configurations"

    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(128), unique=True)
    canonical: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    def __repr__(self) -> str:
        return f"Configuration(id={self.id!r}, hash={self.hash[:12]!r})"


class Workload(Base):
    """A traffic definition (iperf3 parameters ...) identified by its content hash."""

    __tablename__ = "workloads"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    definition: Mapped[dict[str, Any]]
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)

    def __repr__(self) -> str:
        return f"Workload(id={self.id!r}, name={self.name!r})"


class Job(Base):
    """One optimisation run: a space searched on a testbed under a workload."""

    __tablename__ = "jobs"
    __table_args__ = (
        CheckConstraint(f"state IN ({_in(JobState)})", name="state"),
        # Users type job ids; never hand out the id of a deleted job again.
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    state: Mapped[str] = mapped_column(String(16), default=JobState.PENDING.value)
    space_name: Mapped[str] = mapped_column(String(200))
    space_definition: Mapped[dict[str, Any]]
    testbed_id: Mapped[int] = mapped_column(ForeignKey("testbeds.id"), index=True)
    workload_id: Mapped[int] = mapped_column(ForeignKey("workloads.id"), index=True)
    objectives: Mapped[list[str]]
    constraints: Mapped[list[str]]
    engine: Mapped[str] = mapped_column(String(64))
    engine_params: Mapped[dict[str, Any]]
    budget: Mapped[int]
    repeats: Mapped[int]
    seed: Mapped[int]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    error: Mapped[str | None] = mapped_column(Text)
    # Mutable: ``job.stats["measured"] += 1`` is noticed and written on commit.
    stats: Mapped[dict[str, Any]] = mapped_column(MutableDict.as_mutable(SafeJSON), default=dict)
    best_trial_id: Mapped[int | None]
    #: The name of the API token that submitted the job, and of the one that cancelled it
    #: (``None`` for the CLI's own jobs).
    submitted_by: Mapped[str | None] = mapped_column(String(64))
    cancelled_by: Mapped[str | None] = mapped_column(String(64))

    testbed: Mapped[Testbed] = relationship()
    workload: Mapped[Workload] = relationship()
    trials: Mapped[list[Trial]] = relationship(
        back_populates="job", order_by="Trial.number", cascade="all, delete-orphan",
        passive_deletes=True,
    )

    def __repr__(self) -> str:
        return f"Job(id={self.id!r}, state={self.state!r}, space={self.space_name!r})"


class Trial(Base):
    """One configuration evaluated within a job, measured or answered from the cache."""

    __tablename__ = "trials"
    __table_args__ = (
        UniqueConstraint("job_id", "number"),
        CheckConstraint(f"state IN ({_in(TrialState)})", name="state"),
        CheckConstraint(f"source IN ({_in(TrialSource)})", name="source"),
        # A job's trials sorted by a main metric (``?sort=-throughput_gbps``, ties by number)
        # read one index, without the table.
        *(Index(f"ix_trials_job_id_{metric}", "job_id", metric, "number") for metric in MAIN_METRICS),

        # The jobs that measured a configuration (the history's best), without the table.
        Index("ix_trials_configuration_id_state_source_job_id", "configuration_id", "state", "source", "job_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    number: Mapped[int]
    configuration_id: Mapped[int] = mapped_column(ForeignKey("configurations.id"), index=True)
    state: Mapped[str] = mapped_column(String(16), default=TrialState.RUNNING.value)
    source: Mapped[str] = mapped_column(String(16), default=TrialSource.MEASURED.value)
    error: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None]
    summary: Mapped[dict[str, Any] | None]
    snapshot: Mapped[dict[str, Any] | None]
    notes: Mapped[list[Any]] = mapped_column(MutableList.as_mutable(SafeJSON), default=list)
    #: The main metrics of ``summary["metrics"]`` (the trial's means), as columns to sort on:
    #: written with the summary (:func:`nictune.db.trials.summary_columns`); NULL when absent.
    throughput_gbps: Mapped[float | None] = mapped_column(Float)
    loss_pct: Mapped[float | None] = mapped_column(Float)
    interrupts_per_gb: Mapped[float | None] = mapped_column(Float)
    cpu_rx_pct: Mapped[float | None] = mapped_column(Float)
    packet_rate_mpps: Mapped[float | None] = mapped_column(Float)

    job: Mapped[Job] = relationship(back_populates="trials")
    configuration: Mapped[Configuration] = relationship()
    measurements: Mapped[list[Measurement]] = relationship(
        back_populates="trial", order_by="Measurement.repeat", cascade="all, delete-orphan",
        passive_deletes=True,
    )
    #: The finished trial as its job's page lists it (none while it runs).
    page_item: Mapped[TrialItem | None] = relationship(cascade="all, delete-orphan", passive_deletes=True)

    def __repr__(self) -> str:
        return (
            f"Trial(id={self.id!r}, job_id={self.job_id!r}, number={self.number!r}, "
            f"state={self.state!r}, source={self.source!r})"
        )


# A job's trials best first (``?sort=-throughput_gbps``: descending, missing figures last): a
# page at any depth is a range of an index read in order, without a sort (and, with the id in
# it, without the table).
for _metric in MAIN_METRICS:
    Index(f"ix_trials_job_id_{_metric}_desc", Trial.job_id, getattr(Trial, _metric).desc().nulls_last(),
          Trial.number, Trial.id)


class TrialItem(Base):
    """A finished trial as its job's trial page lists it: the API's ``TrialOut`` as JSON, no
    testbed or workload named (:func:`nictune.db.trial_item.store_item`). Kept beside the trial
    so that a page of a long job is its items put together; a trial without one (running, or
    stored by other means) is shown from its row. On PostgreSQL its TOAST target is 8160 bytes
    (migration 0008): an item stays in the row, uncompressed."""

    __tablename__ = "trial_items"

    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"), primary_key=True)
    item: Mapped[str] = mapped_column(Text)


class TrialLandmark(Base):
    """One landmark of a finished job's trials in an order its pages read from an index
    (:mod:`nictune.db.landmarks`): the trial at ``position`` of that order has ``value`` (the
    figure sorted on; ``None`` when it has none, and in orders by number) and ``number``;
    ``total``: the job's trials. Stored when the job finishes."""

    __tablename__ = "trial_landmarks"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    sort: Mapped[str] = mapped_column(String(32), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    value: Mapped[float | None] = mapped_column(Float)
    number: Mapped[int] = mapped_column(Integer)
    total: Mapped[int] = mapped_column(Integer)


class Measurement(Base):
    """One repeat of a trial: the benchmark's metrics and the NIC counters.

    ``testbed_id``, ``workload_id`` and ``configuration_id`` repeat what the trial and
    its job already say, so the fitness-cache lookup is one indexed query.
    """

    __tablename__ = "measurements"
    __table_args__ = (
        Index("ix_measurements_cache_key", "testbed_id", "workload_id", "configuration_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"), index=True)
    repeat: Mapped[int]
    testbed_id: Mapped[int] = mapped_column(ForeignKey("testbeds.id"))
    workload_id: Mapped[int] = mapped_column(ForeignKey("workloads.id"))
    configuration_id: Mapped[int] = mapped_column(ForeignKey("configurations.id"))
    metrics: Mapped[dict[str, Any]]
    throughput_gbps: Mapped[float | None] = mapped_column(Float)
    loss_pct: Mapped[float | None] = mapped_column(Float)
    interrupts_per_gb: Mapped[float | None] = mapped_column(Float)
    cpu_rx_pct: Mapped[float | None] = mapped_column(Float)
    packet_rate_mpps: Mapped[float | None] = mapped_column(Float)
    counters: Mapped[dict[str, Any]]
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime]
    #: Seconds the benchmark measured (its warm-up not counted): a short screening run and a
    #: full run are different fidelities. ``None`` (stored before 0004): a full run.
    duration_s: Mapped[float | None] = mapped_column(Float, default=None)
    #: A short screening run (``optimize --short-run``): it decides whether a configuration
    #: earns a full run and is never a fitness (the cache and every ranking skip it).
    short: Mapped[bool] = mapped_column(default=False, server_default=false())

    trial: Mapped[Trial] = relationship(back_populates="measurements")

    def __repr__(self) -> str:
        return f"Measurement(id={self.id!r}, trial_id={self.trial_id!r}, repeat={self.repeat!r})"


#: Sums kept per main metric in :data:`config_stats`: values counted, their sum, the sum of
#: their squares, and how many squares were summed (a square above 1e100 is left out, as
#: the scan it replaces left it out of the mean; below 1e-100 it counts as 0).
STAT_SUFFIXES: tuple[str, ...] = ("n", "sum", "sumsq", "nsq")


def stat_column(metric: str, suffix: str) -> str:
    """The name of the :data:`config_stats` column holding ``suffix`` of ``metric``."""
    return f"{metric}_{suffix}"


history_version = Table(
    "history_version",
    Base.metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("version", BigInteger, nullable=False),
    CheckConstraint("id = 1", name="one_row"),
)
"""The version of the history's measurements: one row, counted up by every transaction that
adds measurements or rebuilds :data:`config_stats` (a deletion), in that transaction
(:mod:`nictune.db.stats`). A reader that sees the same version sees the same measurements,
whatever order concurrent writers committed in, so the service keeps answers computed from
them for as long as it holds (``nictune.api.cache``), with no expiry. Created by migration 0009."""


config_stats = Table(
    "config_stats",
    Base.metadata,
    Column("testbed_id", Integer, ForeignKey("testbeds.id"), nullable=False),
    Column("workload_id", Integer, ForeignKey("workloads.id"), nullable=False),
    Column("configuration_id", Integer, ForeignKey("configurations.id"), nullable=False),
    Column("measurements", Integer, nullable=False),
    Column("trials", Integer, nullable=False),
    Column("last_measured_at", UTCDateTime, nullable=True),
    *(Column(stat_column(metric, suffix), Integer if suffix in ("n", "nsq") else Float, nullable=False)
      for metric in MAIN_METRICS for suffix in STAT_SUFFIXES),
    PrimaryKeyConstraint("testbed_id", "workload_id", "configuration_id"),
)
"""The read model of the history's best configurations: per (testbed fingerprint, workload,
configuration), the count, sums and sums of squares of the full-length measurements of
completed measured trials, kept in the transaction that records them (:mod:`nictune.db.stats`).
Created and backfilled by migration 0006."""
