"""Stopping rules of a job: a time limit, patience, and why a job stopped.

A job always stops at its budget. It may stop earlier:

* ``time-limit``: it starts no new trial once the time left is less than one more trial and
  the final race need (:meth:`StopRules.needed_s`). The limit counts the time the job ran,
  over its whole life: a resumed job goes on from the time it had used (``stats["elapsed_s"]``),
  and the time it spent stopped does not count.
* ``patience``: ``N`` measured configurations in a row did not become the recommendation
  (the racing policy's choice, :meth:`~nictune.optimizer.racing.RacingPolicy.recommend`).
  Answers from the cache do not count either way; a failed trial neither.
* ``expected-improvement``: the engine's own model rule (``bayes``: ``ei_stop``), reported
  by the engine as its ``stop_reason``.
* ``engine-done``: the engine had nothing left to propose (a small space measured whole).

Either way the job then runs its final race and ends ``completed``; its stats keep the
``stop_reason`` and a sentence for humans (``stop_text``). A job that was stopped
(``interrupted``), ``failed`` or ``cancelled`` says so the same way.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Mapping, MutableMapping
from typing import Any

from nictune.errors import InvalidInputError

__all__ = ["STOP_REASONS", "StopRules", "check_stop_options", "format_duration", "parse_duration",
           "stop_reason_of", "stop_text"]

STOP_REASONS = ("budget", "time-limit", "patience", "expected-improvement", "engine-done", "interrupted",
                "failed", "cancelled")
#: The longest time limit (30 days): longer is a typo, not a plan.
MAX_TIME_LIMIT_S = 30 * 24 * 3600.0
DURATION_FORM = "a positive duration: seconds (90, 90s), minutes (20m) or hours (1.5h), at most 30 days"
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([smh]?)\s*$", re.IGNORECASE)
#: Measured trial durations kept for the estimate (the most recent ones).
KEPT_DURATIONS = 10
#: Benchmark runs the time limit keeps for the final race beyond what an unchallenged race needs.
SPARE_RACE_RUNS = 1
#: The least time the search leaves spare for the final race, however short a run: a loaded
#: host's stall (a disk flush, the scheduler) can take a second whatever the runs take, and
#: simulated jobs with runs of 0.2 s had their final race cut short by one in CI (beside the
#: browser test, the race had no time left even for its first run).
MIN_SPARE_S = 1.0


def parse_duration(raw: str | float | int, field: str = "time_limit") -> float:
    """``90``, ``"90s"``, ``"20m"``, ``"1.5h"`` -> seconds.

    Raises:
        InvalidInputError: naming ``field`` and the allowed form, for anything else, zero,
            a negative duration or one above 30 days.
    """
    seconds: float | None = None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        seconds = float(raw)
    elif isinstance(raw, str):
        match = _DURATION.match(raw)
        if match:
            seconds = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if seconds is None or not math.isfinite(seconds) or not 0 < seconds <= MAX_TIME_LIMIT_S:
        raise InvalidInputError(f"{field.replace('_', '-')} must be {DURATION_FORM}; got {str(raw)[:40]!r}",
                                field=field, allowed=DURATION_FORM)
    return seconds


def format_duration(seconds: float) -> str:
    """Seconds for humans: ``45s``, ``20m``, ``12m 5s``, ``1h 30m``."""
    total = round(seconds)
    if total < 60:
        return f"{seconds:.3g}s" if seconds < 10 else f"{total}s"
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h"] if hours else []
    parts += [f"{minutes}m"] if minutes else []
    parts += [f"{secs}s"] if secs and not hours else []
    return " ".join(parts)


def check_stop_options(time_limit_s: float | None, patience: int | None) -> None:
    """Refuse a time limit or a patience no job could use.

    Raises:
        InvalidInputError: naming ``time_limit`` or ``patience``.
    """
    if time_limit_s is not None:
        parse_duration(time_limit_s)
    if patience is not None and (isinstance(patience, bool) or not isinstance(patience, int)
                                 or not 1 <= patience <= 2**31 - 1):
        raise InvalidInputError(f"patience must be a whole number of measured configurations, at least 1; "
                                f"got {patience!r}", field="patience", allowed="an integer >= 1")


class StopRules:
    """The time limit and the patience of one run of a job (state kept in ``job.stats``).

    Args:
        options: the job's ``stats["options"]`` (``time_limit_s``, ``patience``).
        stats: the job's stats when the run starts (``elapsed_s``, ``stopping``).
        final_race_runs: benchmark runs the final race is expected to need (see :meth:`needed_s`).
    """

    def __init__(self, options: Mapping[str, Any], stats: Mapping[str, Any], final_race_runs: int):
        self.time_limit_s: float | None = options.get("time_limit_s")
        self.patience: int | None = options.get("patience")
        state = dict(stats.get("stopping") or {})
        self._elapsed_before = float(stats.get("elapsed_s") or 0.0)
        self._started = time.monotonic()
        self.durations: list[float] = [float(d) for d in state.get("trial_s") or []]  # per batch and wave
        self.trial_durations: list[float] = [float(d) for d in state.get("each_s") or []]  # trial by trial
        self.race_durations: list[float] = []
        self.unimproved = int(state.get("unimproved", 0))
        self.final_race_runs = final_race_runs
        self.reason: str | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------- time
    def elapsed_s(self) -> float:
        """Seconds the job has run, over every run of it."""
        return self._elapsed_before + time.monotonic() - self._started

    def trial_s(self) -> float | None:
        """What one measured trial takes: the longest of the recent ones (``None`` before any)."""
        timings = self.durations + self.trial_durations
        return max(timings) if timings else None

    def needed_s(self) -> float | None:
        """The time one more trial and the final race still need.

        The estimate: ``(1 + final_race_runs)`` times the longest of the last
        :data:`KEPT_DURATIONS` timings of each kind: batches of the search, their wall time per
        wave of parallel trials, which holds telling the engine and saving the job's state
        (:meth:`add_time`), and measured trials one by one, from the start (the first of a
        batch from the engine's proposal) to the result recorded (:meth:`add_trial_time`).
        A measured trial is one benchmark run with racing, as is each run of the final race;
        ``final_race_runs`` counts the finalists measured once more and the runs the
        recommendation still needs to reach its repeats (a race nothing challenges); then one
        more run's time, or :data:`MIN_SPARE_S` when that is longer, is kept spare, for a
        challenger, a run slower than the ones before it or a stall of a loaded host; the
        race itself also watches the clock, see :meth:`race_fits`. The longest
        rather than the mean, because overrunning a limit is worse than stopping a trial
        early. ``None`` before any trial was measured: the first trial always runs.
        """
        trial = self.trial_s()
        if trial is None:
            return None
        return trial * (1 + self.final_race_runs) + max(trial * SPARE_RACE_RUNS, MIN_SPARE_S)

    def time_is_up(self) -> bool:
        """Whether a new trial must not start (sets :attr:`reason`)."""
        if self.time_limit_s is None:
            return False
        needed = self.needed_s()
        if needed is None:
            return False
        if self.time_limit_s - self.elapsed_s() < needed:
            self.reason = self.reason or "time-limit"
        return self.reason == "time-limit"

    def race_fits(self, runs: int) -> bool:
        """Whether ``runs`` more benchmark runs of the final race end within the limit with
        one run's time to spare: each takes as long as the longest race run so far, or
        before the first one as a measured trial (:meth:`trial_s`), whose time also holds the
        engine's proposal. The spare run (:data:`SPARE_RACE_RUNS`) is for a run slower than
        the ones before it and the job's last writes: without it a loaded host ended a 9 s
        job at 9.23 s."""
        run = max(self.race_durations) if self.race_durations else self.trial_s()
        if self.time_limit_s is None or run is None:
            return True
        return self.elapsed_s() + run * (runs + SPARE_RACE_RUNS) <= self.time_limit_s

    def add_race_time(self, seconds: float, runs: int) -> None:
        """Time ``runs`` benchmark runs of the final race that took ``seconds`` in all."""
        if runs > 0:
            self.race_durations = [*self.race_durations, seconds / runs][-KEPT_DURATIONS:]

    # ---------------------------------------------------------- trials
    def add_time(self, seconds: float, measured: int, slots: int) -> None:
        """Time a batch of the search that measured ``measured`` trials, ``slots`` at a time:
        its wall time per wave of parallel trials, which also holds what follows the trials
        (telling the engine, saving the job's state)."""
        if measured > 0:
            waves = -(-measured // max(1, slots))
            with self._lock:
                self.durations = [*self.durations, seconds / waves][-KEPT_DURATIONS:]

    def add_trial_time(self, seconds: float) -> None:
        """Time one measured trial of the search: its wall time from its start to its result
        recorded, and for the first trial of a batch from the engine's proposal on (the
        proposal is what one more trial also waits for). Timed trial by trial, not batch by
        batch, so that the limit can stop a batch engine (random search, a GA's generation)
        inside its first batch."""
        with self._lock:
            self.trial_durations = [*self.trial_durations, seconds][-KEPT_DURATIONS:]

    def add_trial(self, source: str, became_recommendation: bool) -> None:
        """Count a trial of this run (never a replayed one) for patience: whether it improved
        the recommendation."""
        with self._lock:
            if became_recommendation:
                self.unimproved = 0
            elif source == "measured":
                self.unimproved += 1
            if self.patience is not None and self.unimproved >= self.patience:
                self.reason = self.reason or "patience"

    @property
    def stopped(self) -> bool:
        return self.reason is not None

    def save(self, stats: MutableMapping[str, Any]) -> None:
        """Write the state a resumed job goes on from into ``stats``."""
        stats["elapsed_s"] = round(self.elapsed_s(), 3)
        stats["stopping"] = {"trial_s": [round(d, 4) for d in self.durations],
                             "each_s": [round(d, 4) for d in self.trial_durations], "unimproved": self.unimproved}


def stop_text(reason: str, stats: Mapping[str, Any], *, budget: int, trials: int, engine: str,
              error: str | None = None, engine_text: str | None = None, job_id: int | None = None) -> str:
    """The sentence a job says about why it stopped."""
    options = dict(stats.get("options") or {})
    if reason == "budget":
        return f"stopped: the budget of {budget} trials was spent"
    if reason == "time-limit":
        limit = format_duration(float(options.get("time_limit_s") or 0))
        return (f"stopped: another trial and the final race would not have ended within the time limit of "
                f"{limit} ({format_duration(float(stats.get('elapsed_s') or 0))} used, "
                f"{trials} of {budget} trials)")
    if reason == "patience":
        n = options.get("patience")
        return (f"stopped: {n} measured configurations in a row did not improve the recommendation "
                f"(patience {n}; {trials} of {budget} trials)")
    if reason == "expected-improvement":
        return f"stopped: {engine_text or 'the engine model expected no worthwhile improvement'} " \
               f"({trials} of {budget} trials)"
    if reason == "engine-done":
        return f"stopped: the engine ({engine}) had nothing left to propose after {trials} of {budget} trials"
    if reason == "interrupted":
        resume = f" (resume with nictune optimize --resume {job_id})" if job_id is not None else ""
        return f"stopped: interrupted after {trials} trials{resume}"
    if reason == "cancelled":
        return "stopped: cancelled"
    return f"stopped: failed: {error or 'no reason given'}"


def stop_reason_of(state: str, stats: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """A stored job's ``(stop_reason, stop_text)``; ``(None, None)`` while it has not stopped.

    A cancelled job ends ``interrupted`` in the runner and ``cancelled`` in the service, so
    the state wins over the stored reason there.
    """
    if state == "cancelled":
        return "cancelled", "stopped: cancelled"
    if state in ("pending", "running", "waiting"):
        return None, None
    reason = stats.get("stop_reason")
    return (str(reason), str(stats.get("stop_text") or "")) if reason else (None, None)
