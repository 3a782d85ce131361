"""Everything a report or an export reads from the database about one job, as plain data.

:func:`load_job` reads the job once (through :func:`nictune.jobs.job_report` for the
settings, best and default trials) and adds what the figures need: every trial's
configuration, mean metrics, per-repeat metrics and snapshot. A trial answered from the
fitness cache has no measurements of its own; its repeats are those of the trial of the
same job that measured the configuration, when there is one.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine as DbEngine

from nictune import db
from nictune.errors import InvalidInputError, MeasurementError
from nictune.formatting import format_number
from nictune.jobs import job_report
from nictune.jobs.report import knob_changes
from nictune.optimizer import Goal, Objective
from nictune.optimizer.pareto import MultiScore, pareto_front
from nictune.search_spaces import SearchSpace, space_from_dict

#: What a report says wherever a simulated testbed's numbers appear.
SIMULATED_NOTE = "simulated testbed: these numbers come from a model of the seed papers, not from hardware"


@dataclass
class TrialData:
    """One trial of a job.

    Attributes:
        number: position in the job (0-based).
        state: ``completed``, ``failed`` or ``running``.
        source: ``measured`` or ``cache``.
        config: knob -> value (canonical: only the active knobs).
        config_hash: the configuration's hash.
        metrics: mean metrics over the repeats (empty when the trial failed).
        spread: metric -> ``{"min", "max", "stdev"}`` over the repeats.
        repeats: the metrics of each repeat (may be empty for a cached trial).
        snapshot: host settings recorded before the trial (``None`` when not kept).
        feasible: every metric constraint of the job holds.
        error: why a failed trial failed.
    """

    number: int
    state: str
    source: str
    config: dict[str, Any]
    config_hash: str
    metrics: dict[str, float] = field(default_factory=dict)
    spread: dict[str, dict[str, float]] = field(default_factory=dict)
    repeats: list[dict[str, float]] = field(default_factory=list)
    snapshot: dict[str, Any] | None = None
    feasible: bool = False
    error: str | None = None

    @property
    def completed(self) -> bool:
        """Completed with metrics (usable in figures)."""
        return self.state == "completed" and bool(self.metrics)


@dataclass
class JobData:
    """A job and its trials.

    Attributes:
        info: :func:`nictune.jobs.job_report` of the job.
        space: the job's search space.
        goal: objectives and constraints.
        trials: every trial, in order.
    """

    info: dict[str, Any]
    space: SearchSpace
    goal: Goal
    trials: list[TrialData]

    @property
    def job_id(self) -> int:
        return int(self.info["job_id"])

    @property
    def objective(self) -> Objective:
        """The objective that ranks trials (the first one)."""
        return self.goal.objective

    @property
    def simulated(self) -> bool:
        return bool(self.info.get("simulated"))

    @property
    def completed(self) -> list[TrialData]:
        return [t for t in self.trials if t.completed]

    def trial(self, number: int) -> TrialData:
        """Trial ``number``.

        Raises:
            InvalidInputError: the job has no such trial.
        """
        for t in self.trials:
            if t.number == number:
                return t
        last = self.trials[-1].number if self.trials else None
        allowed = f"0..{last}" if last is not None else "(the job has no trials)"
        raise InvalidInputError(f"job {self.job_id} has no trial {number}", field="trial", allowed=allowed)

    @property
    def best(self) -> TrialData | None:
        """The best trial by the job's goal (feasible first), as :func:`job_report` picks it."""
        best = self.info.get("best")
        return self.trial(int(best["number"])) if best else None

    @property
    def default(self) -> TrialData | None:
        """The trial that measured the space's default configuration, if any."""
        default = self.info.get("default")
        # A default known only from earlier jobs (warm start) is not a trial of this job.
        return self.trial(int(default["number"])) if default and default.get("number") is not None else None

    @property
    def baseline(self) -> TrialData | None:
        """The default configuration's figures for comparison: this job's trial of it, else what
        earlier jobs measured of it on the same testbed and workload (a warm-started job
        skips the default); then ``source`` is ``history`` and ``number`` is -1."""
        own = self.default
        known = self.info.get("default")
        if own is not None or not known or not known.get("metrics"):
            return own
        found = {k: float(v) for k, v in known["metrics"].items()}
        return TrialData(number=-1, state="completed", source="history", config=dict(known["config"]),
                         config_hash=str(known["config_hash"]), metrics=found,
                         spread={k: dict(v) for k, v in (known.get("spread") or {}).items()},
                         feasible=self.goal.score(found).feasible)

    def value(self, metrics: Mapping[str, float], objective: Objective | None = None) -> float:
        """``objective`` (by default the first) in natural units (NaN when a metric is missing)."""
        try:
            return float((objective or self.objective).value(metrics))
        except MeasurementError:  # a metric missing from an odd trial: leave it out of figures
            return math.nan

    @property
    def pareto(self) -> bool:
        """The job has several objectives: it is presented as a front first."""
        return len(self.goal.objectives) >= 2

    def changes(self, trial: TrialData) -> str:
        """What ``trial`` changed from the space's default: ``mtu=9000, rx_ring=4096``.

        A knob the trial left inactive (its parent's mode is off) reads ``knob off``.
        """
        shown = [f"{c['knob']}={c['best']}" if c["best"] is not None else f"{c['knob']} off"
                 for c in knob_changes(self.space, trial.config)]
        return ", ".join(shown) or "(the default configuration)"

    def front(self) -> list[TrialData]:
        """The job's Pareto front, best first objective first.

        The front the job stored when it finished (what ``history show`` and the dashboard
        list); for a job that stored none, the non-dominated completed trials (one trial per
        configuration).
        """
        stored = [f["number"] for f in self.info.get("front") or []]
        members = [t for t in (self.trial(n) for n in stored) if t.completed]
        if not members:
            items = []
            seen: set[str] = set()
            for t in self.completed:
                if t.config_hash in seen:
                    continue
                seen.add(t.config_hash)
                try:
                    items.append((t, MultiScore.from_goal(self.goal, t.metrics)))
                except (MeasurementError, ValueError):
                    continue
            members = [t for t, _ in pareto_front(items)]
        sign = -1.0 if self.objective.direction == "maximize" else 1.0
        return sorted(members, key=lambda t: (sign * self.value(t.metrics), t.number))

    def repeat_values(self, trial: TrialData) -> list[float]:
        """The objective of each repeat (the mean alone when the repeats are unknown)."""
        rows = trial.repeats or ([trial.metrics] if trial.metrics else [])
        return [v for v in (self.value(r) for r in rows) if math.isfinite(v)]


def _repeats(measurements: list[db.Measurement]) -> list[dict[str, float]]:
    return [{k: float(v) for k, v in (m.metrics or {}).items()} for m in measurements]


def load_job(dbe: DbEngine, job_id: int) -> JobData:
    """Read job ``job_id`` and its trials.

    Raises:
        NotFoundError: there is no such job.
        StorageError: the database failed.
    """
    info = job_report(dbe, job_id)
    with db.session_scope(dbe) as s:
        job = db.get_job(s, job_id)
        space = space_from_dict(dict(job.space_definition))
        goal = Goal.from_names(list(job.objectives), list(job.constraints))
        rows = db.job_trials(s, job_id)
        trials: list[TrialData] = []
        for row in rows:
            summary = dict(row.summary or {})
            metrics = {k: float(v) for k, v in (summary.get("metrics") or {}).items()}
            trials.append(TrialData(
                number=row.number,
                state=row.state,
                source=row.source,
                config=json.loads(row.configuration.canonical),
                config_hash=row.configuration.hash,
                metrics=metrics,
                spread={k: dict(v) for k, v in (summary.get("spread") or {}).items()},
                repeats=_repeats(list(row.measurements)),
                snapshot=dict(row.snapshot) if row.snapshot else None,
                feasible=bool(metrics) and goal.score(metrics).feasible,
                error=row.error,
            ))
    measured = {t.config_hash: t for t in trials if t.repeats}
    for t in trials:
        if not t.repeats and t.config_hash in measured:
            t.repeats = list(measured[t.config_hash].repeats)
            if t.snapshot is None:
                t.snapshot = measured[t.config_hash].snapshot
    return JobData(info=info, space=space, goal=goal, trials=trials)


def human_time(iso: str | None) -> str:
    """``2026-11-27 09:14 UTC`` for an ISO timestamp (naive ones are UTC); ``-`` for none."""
    if not iso:
        return "-"
    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    if when.tzinfo is not None:
        when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%d %H:%M UTC")


def gain(job: JobData, trial: TrialData) -> dict[str, Any]:
    """The objective of ``trial`` against the default's: values, relative change, a sentence.

    Returns:
        ``{"objective", "unit", "direction", "value", "default", "change_pct", "better", "text"}``;
        ``default``, ``change_pct`` and ``better`` are ``None`` when the job did not
        measure the default configuration.
    """
    o = job.objective
    value = job.value(trial.metrics)
    default = job.default
    out: dict[str, Any] = {"objective": o.name, "label": o.label, "unit": o.unit, "direction": o.direction,
                           "value": value, "default": None, "change_pct": None, "better": None}
    where = f" on {job.info['testbed']}" + (" (simulated: a model, not hardware)" if job.simulated else "")
    if default is None or not default.completed:
        out["text"] = (f"{o.label} {format_number(value)} {o.unit} (trial {trial.number}); the default configuration "
                       f"was not measured in job {job.job_id}{where}")
        return out
    base = job.value(default.metrics)
    out["default"] = base
    change = (value - base) / abs(base) * 100 if base and math.isfinite(base) and math.isfinite(value) else None
    out["change_pct"] = change
    out["better"] = value > base if o.direction == "maximize" else value < base
    shown = f"{change:+.1f}%" if change is not None else "n/a"
    better = "higher is better" if o.direction == "maximize" else "lower is better"
    out["text"] = (f"{o.label} {format_number(value)} {o.unit} (trial {trial.number}) vs "
                   f"{format_number(base)} {o.unit} for the default (trial {default.number}): {shown}, {better}; "
                   f"measured{where}")
    return out


def median(values: list[float]) -> float:
    """The median, NaN for no values."""
    return statistics.median(values) if values else math.nan


__all__ = ["SIMULATED_NOTE", "JobData", "TrialData", "gain", "human_time", "load_job", "median"]
