"""The rounds of a one-factor-at-a-time job and the "profiles" each round measured.

A round of the ``ofat`` engine measures a *center* and every one-factor change of it; in
the 40 GbE study's figures each such change is a *profile* (``mtu=1500``,
``rx_ring=256`` ...) shown next to the center. To know which center a trial belonged to,
the job's stored trials are replayed through a fresh engine with the job's seed, exactly
as the job loop does when it resumes a job. Should the replay disagree with what was
stored (nictune changed since), every trial is compared with the first center instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nictune.errors import NictuneError
from nictune.jobs.runner import start_configs
from nictune.optimizer import Score, make_engine
from nictune.report.data import JobData, TrialData
from nictune.search_spaces import Configuration, SearchSpace

#: The job loop never asks for more configurations at a time (runner.MAX_BATCH).
_BATCH = 64


@dataclass
class Profile:
    """One bar of the figure: a label and the trial that measured it."""

    label: str
    trial: TrialData
    is_center: bool = False


@dataclass
class Round:
    """A center and the profiles measured around it."""

    index: int
    center: dict[str, Any]
    profiles: list[Profile] = field(default_factory=list)


def _profile_names(space: SearchSpace) -> dict[str, str]:
    names: dict[str, str] = {}
    for name in space.profile_names():
        try:
            names.setdefault(space.profile(name).hash, name)
        except NictuneError:
            continue
    return names


def change_label(space: SearchSpace, center: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """``knob=value`` for each knob that differs from ``center`` and is not merely a
    conditional knob switched on or off by its parent's change."""
    changed = [n for n in space.knobs if center.get(n) != config.get(n)]
    primary = []
    for name in changed:
        cond = space.knobs[name].condition
        if cond is not None and cond.knob in changed:
            continue  # poll_usecs appearing because rx_mode became timer
        primary.append(name)
    shown = primary or changed
    return ", ".join(f"{n}={config[n]}" if n in config else f"{n} off" for n in shown) or "(same)"


def _first_center(job: JobData) -> Configuration:
    name = (job.info.get("engine_params") or {}).get("center")
    if isinstance(name, str) and name in job.space.profile_names():
        return job.space.profile(name)
    if "baseline" in job.space.profiles:
        return job.space.profile("baseline")
    return job.space.default()


def _replay(job: JobData) -> dict[int, tuple[int, dict[str, Any]]]:
    """Trial number -> (round, center) by replaying the trials through the engine."""
    info = job.info
    engine = make_engine(info["engine"], job.space, seed=int(info["seed"]),
                         params=dict(info.get("engine_params") or {}), start=start_configs(job.space))
    by_number = {t.number: t for t in job.trials}
    out: dict[int, tuple[int, dict[str, Any]]] = {}
    number = 0
    budget = int(info["budget"])
    while number < len(job.trials) and number < budget and not engine.finished:
        batch = engine.ask(min(_BATCH, budget - number))
        if not batch:
            break
        where = (int(getattr(engine, "round", 0)), dict(getattr(engine, "center", batch[0])))
        for config in batch:
            trial = by_number.get(number)
            if trial is None:
                return out
            if trial.config_hash != config.hash:
                raise ValueError(f"trial {number} does not replay")
            out[number] = where
            score = job.goal.score(trial.metrics) if trial.completed else Score.failed()
            engine.tell(config, score)
            number += 1
    return out


def ofat_rounds(job: JobData) -> list[Round]:
    """The rounds of an ``ofat`` job, each with its center first, then its one-factor changes."""
    names = _profile_names(job.space)
    try:
        placed = _replay(job)
    except (NictuneError, ValueError):
        placed = {}
    if not placed:
        center = dict(_first_center(job))
        placed = {t.number: (0, center) for t in job.trials}
    rounds: dict[int, Round] = {}
    for trial in job.trials:
        if trial.number not in placed:
            continue
        index, center = placed[trial.number]
        rnd = rounds.setdefault(index, Round(index, center))
        if trial.config == center:
            label = names.get(trial.config_hash, "center")
            rnd.profiles.insert(0, Profile(f"{label} (center)", trial, is_center=True))
        elif trial.config_hash in names:
            rnd.profiles.append(Profile(names[trial.config_hash], trial))
        else:
            rnd.profiles.append(Profile(change_label(job.space, center, trial.config), trial))
    return [rounds[k] for k in sorted(rounds)]


__all__ = ["Profile", "Round", "change_label", "ofat_rounds"]
