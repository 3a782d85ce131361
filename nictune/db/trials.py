"""Writing trials and their measurements; the crash-recovery reset."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from nictune.db import stats
from nictune.db._errors import maps_storage_errors
from nictune.db.landmarks import clear_landmarks
from nictune.db.models import (
    MAIN_METRICS,
    Configuration,
    Job,
    Measurement,
    Trial,
    TrialSource,
    TrialState,
)
from nictune.db.trial_item import store_item
from nictune.db.types import as_utc, utcnow
from nictune.errors import InvalidInputError, JobError


@dataclass(frozen=True)
class TrialSummaryRow:
    """One trial as :func:`job_trial_summaries` reads it."""

    id: int
    number: int
    state: str
    source: str
    error: str | None
    summary: dict[str, Any] | None
    config_hash: str
    canonical: str


class Sample(Protocol):
    """What :func:`complete_trial` needs from one repeat of a measurement."""

    @property
    def metrics(self) -> Mapping[str, float]:
        """Metric name → value (``throughput_gbps``, ``loss_pct`` ...)."""
        ...

    @property
    def counters(self) -> Mapping[str, Any]:
        """NIC and kernel counters read around the benchmark (JSON-serialisable)."""
        ...

    @property
    def started_at(self) -> datetime:
        """When the repeat started (aware, or naive UTC)."""
        ...

    @property
    def finished_at(self) -> datetime:
        """When the repeat finished (aware, or naive UTC)."""
        ...


@maps_storage_errors
def start_trial(s: Session, job: Job, number: int, configuration: Configuration) -> Trial:
    """Record that trial ``number`` of ``job`` has started on ``configuration``.

    Commit this before measuring: a crash then leaves a ``running`` trial that
    :func:`reset_running_trials` removes on resume.

    Raises:
        JobError: the job already has a trial with this number.
        InvalidInputError: ``number`` is negative.
        StorageError: the database failed.
    """
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise InvalidInputError(f"trial number must be >= 0, got {number!r}", field="number")
    duplicate = JobError(f"job {job.id} already has a trial number {number}")
    exists = s.scalar(select(Trial.id).where(Trial.job_id == job.id, Trial.number == number))
    if exists is not None:
        raise duplicate
    try:
        with s.begin_nested():
            # Built inside the SAVEPOINT: begin_nested() autoflushes, and a Trial already
            # linked to the job but not yet in the session would be skipped with a warning.
            trial = Trial(
                job=job, number=number, configuration=configuration,
                state=TrialState.RUNNING.value, source=TrialSource.MEASURED.value, notes=[],
            )
            s.add(trial)
    except IntegrityError as exc:
        raise duplicate from exc
    return trial


def _require_running(trial: Trial) -> None:
    if trial.state != TrialState.RUNNING:
        raise JobError(
            f"trial {trial.number} of job {trial.job_id} is {trial.state}, not running"
        )


def _metrics(sample: Sample, repeat: int) -> dict[str, float]:
    metrics: dict[str, float] = {}
    for name, value in sample.metrics.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number):
            raise InvalidInputError(
                f"metric {name!r} of repeat {repeat} is {value!r}, not a finite number",
                field=name,
            )
        metrics[name] = number
    return metrics


def _measurement(trial: Trial, sample: Sample, repeat: int, duration_s: float | None,
                 short: bool = False) -> Measurement:
    metrics = _metrics(sample, repeat)
    job = trial.job
    return Measurement(
        repeat=repeat,
        testbed_id=job.testbed_id,
        workload_id=job.workload_id,
        configuration_id=trial.configuration_id,
        metrics=metrics,
        counters=dict(sample.counters),
        started_at=as_utc(sample.started_at),
        finished_at=as_utc(sample.finished_at),
        duration_s=duration_s,
        short=short,
        **{name: metrics.get(name) for name in MAIN_METRICS},
    )


def summary_columns(summary: Mapping[str, Any] | None) -> dict[str, float | None]:
    """The trial's columns for the main metrics: ``summary["metrics"]``'s finite numbers."""
    metrics = (summary or {}).get("metrics")
    if not isinstance(metrics, Mapping):
        metrics = {}
    out: dict[str, float | None] = {}
    for name in MAIN_METRICS:
        value = metrics.get(name)
        number = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:  # an integer beyond any float
                number = None
        out[name] = number if number is not None and math.isfinite(number) else None
    return out


def _set_summary(trial: Trial, summary: Mapping[str, Any]) -> None:
    trial.summary = dict(summary)
    for name, value in summary_columns(trial.summary).items():
        setattr(trial, name, value)


@maps_storage_errors
def complete_trial(
    s: Session,
    trial: Trial,
    samples: Sequence[Sample],
    source: str,
    summary: Mapping[str, Any],
    snapshot: Mapping[str, Any] | None = None,
    notes: Sequence[Any] | None = None,
    duration_s: float | None = None,
    short: bool = False,
) -> None:
    """Mark a running trial completed and store one measurement per sample.

    Args:
        s: the session.
        trial: from :func:`start_trial`, still running.
        samples: one per repeat, in order. At least one for ``measured``; none for
            ``cache`` (the cached numbers go in ``summary``).
        source: ``measured`` or ``cache``. Only measured trials feed the cache.
        summary: mean metrics over the repeats.
        snapshot: host settings before the trial.
        notes: remarks to keep with the trial (replace the current ones when given).
        duration_s: seconds each sample's benchmark measured (a short run's, or the workload's).
        short: the samples are short screening runs (never a fitness: the cache skips them).

    Raises:
        JobError: the trial is not running.
        InvalidInputError: unknown source, no samples for a measured trial, samples for
            a cache trial, or a metric that is not a finite number.
        StorageError: the database failed.
    """
    _require_running(trial)
    try:
        trial_source = TrialSource(source)
    except ValueError:
        raise InvalidInputError(
            f"unknown trial source {source!r}", field="source",
            allowed=", ".join(member.value for member in TrialSource),
        ) from None
    sample_list = list(samples)
    if trial_source is TrialSource.MEASURED and not sample_list:
        raise InvalidInputError("a measured trial needs at least one sample", field="samples")
    if trial_source is TrialSource.CACHE and sample_list:
        # The samples belong to the trials that measured them; copying them here would
        # count them twice in every history and cache query.
        raise InvalidInputError(
            "a cache trial stores no measurements of its own; pass no samples and put "
            "the cached means in the summary", field="samples",
        )
    added = [_measurement(trial, sample, repeat, duration_s, short) for repeat, sample in enumerate(sample_list)]
    trial.measurements.extend(added)
    trial.state = TrialState.COMPLETED.value
    trial.source = trial_source.value
    _set_summary(trial, summary)
    trial.snapshot = dict(snapshot) if snapshot is not None else None
    if notes is not None:
        trial.notes = list(notes)
    trial.error = None
    trial.finished_at = utcnow()
    store_item(trial)
    s.flush()
    stats.record(s, trial, added, counted_before=False)


@maps_storage_errors
def add_measurements(
    s: Session, trial: Trial, samples: Sequence[Sample], summary: Mapping[str, Any],
    duration_s: float | None = None, short: bool = False,
) -> None:
    """Add more repeats to a completed trial (an incumbent measured again) and replace its
    summary. A trial answered from the cache becomes ``measured``: it now has numbers of
    its own, and they feed the cache like any other measurement.

    Raises:
        JobError: the trial is not completed.
        InvalidInputError: a metric is not a finite number, or no samples.
        StorageError: the database failed.
    """
    if trial.state != TrialState.COMPLETED:
        raise JobError(f"trial {trial.number} of job {trial.job_id} is {trial.state}, not completed")
    sample_list = list(samples)
    if not sample_list:
        raise InvalidInputError("no samples to add", field="samples")
    first = len(trial.measurements)
    counted_before = trial.source == TrialSource.MEASURED and any(not m.short for m in trial.measurements)
    added = [_measurement(trial, sample, first + offset, duration_s, short)
             for offset, sample in enumerate(sample_list)]
    trial.measurements.extend(added)
    trial.source = TrialSource.MEASURED.value
    _set_summary(trial, summary)
    store_item(trial)
    s.flush()
    stats.record(s, trial, added, counted_before=counted_before)


@maps_storage_errors
def fail_trial(s: Session, trial: Trial, error: str) -> None:
    """Mark a running trial failed with ``error``; it never feeds the cache.

    Raises:
        JobError: the trial is not running.
        StorageError: the database failed.
    """
    _require_running(trial)
    trial.state = TrialState.FAILED.value
    trial.error = error
    trial.finished_at = utcnow()
    store_item(trial)
    s.flush()


@maps_storage_errors
def job_trials(s: Session, job_id: int) -> list[Trial]:
    """Return the trials of a job ordered by number, configuration and measurements loaded
    (an account of the job reads :func:`job_trial_summaries` instead).

    Returns an empty list for an unknown job id.
    """
    stmt = (
        select(Trial)
        .where(Trial.job_id == job_id)
        .order_by(Trial.number)
        .options(selectinload(Trial.configuration), selectinload(Trial.measurements))
    )
    return list(s.scalars(stmt))


@maps_storage_errors
def job_trial_summaries(s: Session, job_id: int) -> list[TrialSummaryRow]:
    """The trials of a job in order with what an account of the job reads of them: id, number,
    state, source, error, summary and the configuration's hash and canonical text (one query,
    no ORM objects: a long job's account is mostly this read)."""
    stmt = (select(Trial.id, Trial.number, Trial.state, Trial.source, Trial.error, Trial.summary,
                   Configuration.hash, Configuration.canonical)
            .join(Configuration, Trial.configuration_id == Configuration.id)
            .where(Trial.job_id == job_id).order_by(Trial.number))
    return [TrialSummaryRow(*row) for row in s.execute(stmt)]


@maps_storage_errors
def reset_running_trials(s: Session, job_id: int, trial_ids: Sequence[int] | None = None) -> int:
    """Delete the trials a crash left ``running`` so that resuming measures them again
    (only those of ``trial_ids`` when given: a trial that never started measuring).

    Returns:
        How many trials were deleted.
    """
    stmt = select(Trial.id).where(Trial.job_id == job_id, Trial.state == TrialState.RUNNING)
    if trial_ids is not None:
        stmt = stmt.where(Trial.id.in_(list(trial_ids)))
    ids = list(s.scalars(stmt))
    if ids:
        s.execute(delete(Measurement).where(Measurement.trial_id.in_(ids)))
        s.execute(delete(Trial).where(Trial.id.in_(ids)))
        clear_landmarks(s, job_id)  # the job's pages change
    return len(ids)
