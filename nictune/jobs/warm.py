"""Warm start: earlier measurements on the same testbed and workload seed a new job's engine.

The configurations (of this job's space) that any earlier job measured on the same testbed
fingerprint and workload are told to the engine before it asks for anything: it learns
from them and never proposes them again. The few best of them also become the job's
first trials, answered from the cache at no cost, so the job's recommendation can never be
worse than what is already known.

The job stores (``stats["warm_start"]``) the id of the newest measurement it could see at
its first run; a resumed job reads only measurements up to that id, so it replays exactly
the same warm start.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from nictune import db
from nictune.errors import InvalidInputError
from nictune.optimizer import Goal
from nictune.search_spaces import Configuration, SearchSpace

#: At most this many earlier configurations are reused (the most recently measured).
LIMIT = 500
#: How many of the best earlier configurations become the job's first (cached) trials.
TOP = 3


def newest_measurement(s: Session) -> int:
    """The id of the newest measurement (0 when there is none)."""
    return int(s.scalar(select(func.max(db.Measurement.id))) or 0)


def history(s: Session, job: db.Job, space: SearchSpace, until: int) -> list[dict[str, Any]]:
    """Earlier measured configurations of ``space`` on the job's testbed and workload
    (measurements with ids up to ``until``, other jobs only).

    Returns:
        ``[{"values": {...}, "metrics": {...mean...}, "n": samples}]``, most recent first.
    """
    stmt = (
        select(db.Configuration.hash, db.Configuration.canonical, db.Measurement.metrics)
        .join(db.Measurement, db.Measurement.configuration_id == db.Configuration.id)
        .join(db.Trial, db.Measurement.trial_id == db.Trial.id)
        .where(
            db.Measurement.testbed_id == job.testbed_id,
            db.Measurement.workload_id == job.workload_id,
            db.Trial.state == db.TrialState.COMPLETED,
            db.Trial.job_id != job.id,
            db.Measurement.id <= until,
            db.Measurement.short.is_(False),  # a screening run is another fidelity
        )
        .order_by(db.Measurement.id.desc())
    )
    samples: dict[str, list[Mapping[str, float]]] = defaultdict(list)
    values: dict[str, dict[str, Any]] = {}
    for config_hash, canonical, metrics in s.execute(stmt):
        if config_hash not in values:
            if len(values) >= LIMIT:
                continue
            raw = json.loads(canonical) if isinstance(canonical, str) else dict(canonical)
            try:
                config = space.configuration(raw, strict=True)
            except InvalidInputError:  # another space's configuration
                continue
            if config.hash != config_hash:
                continue
            values[config_hash] = config.as_dict()
        samples[config_hash].append(metrics)
    return [{"values": values[h], "metrics": Goal.mean_metrics(samples[h]), "n": len(samples[h])}
            for h in values]


def split(goal: Goal, entries: list[dict[str, Any]], space: SearchSpace, top: int = TOP,
          ) -> tuple[list[Configuration], list[tuple[Configuration, dict[str, float]]]]:
    """The ``top`` best earlier configurations (to run first, from the cache) and the rest
    with their mean metrics (to tell the engine), in the order of ``entries``."""
    configs = [(space.configuration(e["values"], strict=True), dict(e["metrics"])) for e in entries]
    ranked = sorted(range(len(configs)), key=lambda i: goal.score(configs[i][1]), reverse=True)
    first = [configs[i][0] for i in ranked[:top]]
    rest = [configs[i] for i in sorted(ranked[top:])]
    return first, rest
