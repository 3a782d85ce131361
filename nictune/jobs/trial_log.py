"""One plain line per trial: what a pipe, a CI log or the service's log shows of a job.

``optimize`` prints :func:`trial_line` when its output is not a terminal (local jobs and
jobs followed on a service alike), and the service logs it for the jobs it runs, so a
log reads the same wherever it comes from::

    [5/20] trial 4 5924b9e3bac2 measured (simulated) 0.001 s | throughput 4.862 Gbit/s, loss_pct 0.316 %,
    breaks loss_pct <= 0.1 | best trial 1: 39.6 Gbit/s | changes: enable_sys_tune=True rx_ring=256 ... +4 more

(one line, cut here; from the simulated testbed, a model).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine as DbEngine

from nictune import db
from nictune.errors import MeasurementError
from nictune.formatting import format_number
from nictune.jobs.evaluate import TrialEvent
from nictune.optimizer import OBJECTIVES, Goal
from nictune.search_spaces import SearchSpace, space_from_dict

#: The service logs every trial of the jobs it runs here (level INFO).
log = logging.getLogger("nictune.jobs")

#: Changed knobs shown by name before the rest are counted ("+3 more").
MAX_KNOBS = 6
#: A knob value or an error longer than this is cut (``...``): a line stays a line.
MAX_VALUE_CHARS = 24
MAX_ERROR_CHARS = 200

#: Units of the metrics an objective reads as it is (``loss_pct`` -> ``%``).
_UNITS = {o.metric: o.unit for o in OBJECTIVES.values() if o.per is None}


@dataclass(frozen=True)
class LineContext:
    """What a trial line needs besides the event: the job's goal and its space's default.

    Attributes:
        goal: the job's objectives and constraints.
        space: the job's search space; ``None`` when unknown (the line then names no knobs).
        simulated: the testbed is a model: every line says so (``measured (simulated)``).
    """

    goal: Goal
    space: SearchSpace | None
    simulated: bool = False
    default: Mapping[str, Any] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "default", self.space.default().as_dict() if self.space is not None else {})

    @classmethod
    def of_job(cls, dbe: DbEngine, job_id: int) -> LineContext:
        """The context of stored job ``job_id``.

        Raises:
            NotFoundError: there is no such job.
            StorageError: the database failed.
        """
        with db.session_scope(dbe) as s:
            job = db.get_job(s, job_id)
            goal = Goal.from_names(list(job.objectives), list(job.constraints))
            definition = dict(job.space_definition)
            simulated = job.testbed.kind == "sim"
        return cls(goal, space_from_dict(definition), simulated)


def trial_line(event: TrialEvent, context: LineContext) -> str:
    """One line for trial ``event``: progress, hash, source and seconds; its metrics (or its
    error); the best so far; the knobs that differ from the space's default.

    Plain text (no markup, no escape codes), one line whatever the error text holds.
    """
    head = f"[{event.number + 1}/{event.budget}] trial {event.number} {event.config.short_hash} {event.source}"
    if context.simulated:
        head += " (simulated)"
    short = event.short or {}
    if short:  # short runs first: left at its short run, or promoted to a full one
        head += (f" [short {short.get('duration_s', 0):g} s -> full run]" if short.get("promoted")
                 else f" [left at its {short.get('duration_s', 0):g} s short run]")
    if event.seconds is not None:
        head += f" {seconds_text(event.seconds)}"
    if event.source == "failed" or not event.metrics:
        result = f"error: {_cut(' '.join((event.error or 'no reason given').split()), MAX_ERROR_CHARS)}"
    else:
        result = metrics_text(event.metrics, context.goal)
    return " | ".join((head, result, best_text(event, context.goal), changes_text(event.config, context)))


def metrics_text(metrics: Mapping[str, float], goal: Goal) -> str:
    """The objectives, then each constrained metric not shown yet, then the bounds broken:
    ``throughput 7.2 Gbit/s, loss_pct 0.226 %, breaks loss_pct <= 0.1``."""
    parts = [f"{o.label} {_value(o.value, metrics)} {o.unit}" for o in goal.objectives]
    shown = {o.metric for o in goal.objectives if o.per is None}
    for c in goal.constraints:
        if c.metric not in shown:
            shown.add(c.metric)
            unit = _UNITS.get(c.metric)
            parts.append(f"{c.metric} {format_number(metrics.get(c.metric))}" + (f" {unit}" if unit else ""))
    parts += [f"breaks {c}" for c in goal.constraints if not _holds(c.satisfied, metrics)]
    return ", ".join(parts)


def best_text(event: TrialEvent, goal: Goal) -> str:
    """``best trial 5: 39.6 Gbit/s``, or why there is none yet."""
    if event.best_number is not None and event.best_metrics:
        o = goal.objective
        return f"best trial {event.best_number}: {_value(o.value, event.best_metrics)} {o.unit}"
    return "best: nothing meets the constraints yet" if goal.constraints else "best: none yet"


def changes_text(config: Mapping[str, Any], context: LineContext) -> str:
    """The knobs of ``config`` that differ from the space's default, in the space's order
    (``name=value``; the first :data:`MAX_KNOBS`, then how many more)."""
    if context.space is None:
        return "changes: unknown (space not known here)"
    default = context.default
    changed = [f"{name}={_cut(str(config[name]), MAX_VALUE_CHARS)}" for name in context.space.knobs
               if name in config and config[name] != default.get(name)]
    if not changed:
        return "changes: none (the default)"
    more = len(changed) - MAX_KNOBS
    return "changes: " + " ".join(changed[:MAX_KNOBS]) + (f" +{more} more" if more > 0 else "")


def seconds_text(seconds: float) -> str:
    """``0.012 s`` (a model's measurement), ``31.4 s`` (a real one)."""
    return f"{seconds:.3f} s" if seconds < 1 else f"{seconds:.1f} s"


def log_trial(event: TrialEvent, context: LineContext) -> None:
    """Log :func:`trial_line` of ``event`` at INFO on ``nictune.jobs``, with the job's id.

    A line that cannot be made is logged as an error: a log line never stops a job."""
    try:
        line = trial_line(event, context)
    except Exception:  # the job goes on; the traceback says what to fix
        log.exception("job %s: trial %s: cannot format its log line", event.job_id, event.number)
        return
    log.info("job %s: %s", event.job_id, line)


def log_notice(job_id: int, text: str) -> None:
    """Log a notice of job ``job_id`` (final race, warm start ...) as :func:`log_trial` logs its trials."""
    log.info("job %s: %s", job_id, text)


def _value(of: Any, metrics: Mapping[str, float]) -> str:
    try:
        return format_number(of(metrics))
    except MeasurementError:  # a metric it reads is missing
        return "-"


def _holds(satisfied: Any, metrics: Mapping[str, float]) -> bool:
    try:
        return bool(satisfied(metrics))
    except MeasurementError:
        return False


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["LineContext", "best_text", "changes_text", "log_notice", "log_trial", "metrics_text", "seconds_text",
           "trial_line"]
