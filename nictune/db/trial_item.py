"""A trial as the API lists it, and its page-ready JSON kept with the trial.

:func:`trial_item` is the one definition of a listed trial (the API's ``TrialOut``): the
service builds it from stored rows, and the recorder of a trial stores its JSON for the
trial's job page in ``trial_items`` whenever the trial's state, summary or error changes, so
that a page of a long job is its stored items put together, not 50 summaries decoded and
encoded again per request. A running trial has none (its page item is built from the row).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from nictune.db._json import json_safe
from nictune.db.models import TrialItem, TrialState

if TYPE_CHECKING:
    from nictune.db.models import Trial

#: How timestamps are written: UTC with a ``Z`` (naive values are UTC).
JSON_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NAIVE_UTC


def finite(value: Any) -> float | None:
    """A JSON-safe number: ``None`` for NaN, infinities and non-numbers."""
    kind = type(value)
    if kind is float:  # the common case first: this runs for every metric of every trial shown
        return value if math.isfinite(value) else None
    if kind is int:
        return float(value)
    if isinstance(value, float | int) and not isinstance(value, bool):  # numpy scalars and the like
        return finite(float(value))
    return None


def clean_score(score: Any) -> dict[str, Any] | None:
    """A stored or computed score (a mapping or anything with ``as_dict()``) with non-finite
    numbers as null."""
    if score is None:
        return None
    raw = dict(score) if isinstance(score, Mapping) else score.as_dict()
    return {"feasible": bool(raw.get("feasible")), "value": finite(raw.get("value")),
            "violation": finite(raw.get("violation"))}


def trial_item(*, job_id: int, number: int, state: str, source: str, config_hash: str, canonical: str,
               summary: Mapping[str, Any] | None, error: str | None, started_at: datetime | None,
               finished_at: datetime | None, simulated: bool, testbed: str | None = None,
               workload: str | None = None) -> dict[str, Any]:
    """A trial as the API lists it (``TrialOut``, as a JSON-ready dict: a page of them is built
    without validating each; a test checks them against the schema). ``canonical`` is the
    configuration's canonical JSON as stored (passed on as it is); ``summary`` the trial's
    summary as stored (NaN and infinities already null)."""
    summary = summary or {}
    repeats = summary.get("repeats")
    cached_from = summary.get("cached_from")
    return {
        "job_id": job_id, "number": number, "state": state, "source": source, "config_hash": config_hash,
        "config": orjson.Fragment(canonical) if canonical.startswith("{") else {"value": json.loads(canonical)},
        "metrics": summary.get("metrics") or {}, "spread": summary.get("spread") or {},
        "score": clean_score(summary.get("score")),
        "repeats": repeats if type(repeats) is int else None,
        "cached_from": cached_from if type(cached_from) is int else None,
        "seconds": finite(summary.get("seconds")), "error": error, "started_at": started_at,
        "finished_at": finished_at, "testbed": testbed, "workload": workload, "simulated": simulated,
    }


def _plain(value: Any) -> Any:
    # What json.dumps accepts and orjson does not: float and int subclasses (numpy scalars).
    if isinstance(value, float):
        return finite(float(value))
    if isinstance(value, int):
        return int(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def item_json(item: Mapping[str, Any]) -> bytes:
    """The JSON of a :func:`trial_item` (or a page holding them)."""
    return orjson.dumps(item, default=_plain, option=JSON_OPTIONS)


def store_item(trial: Trial) -> None:
    """Keep the trial's page item (``trial_items``) in step with its row: the JSON of a
    finished trial on its job's page, none while it runs. Reads the trial's configuration and
    its job's testbed (loaded if they are not)."""
    if trial.finished_at is None or trial.state == TrialState.RUNNING:
        trial.page_item = None
        return
    configuration = trial.configuration
    text = item_json(trial_item(
        job_id=trial.job_id, number=trial.number, state=trial.state, source=trial.source,
        config_hash=configuration.hash, canonical=configuration.canonical,
        summary=json_safe(trial.summary) if trial.summary is not None else None, error=trial.error,
        started_at=trial.started_at, finished_at=trial.finished_at,
        simulated=trial.job.testbed.kind == "sim")).decode()
    if trial.page_item is None:
        trial.page_item = TrialItem(item=text)
    else:
        trial.page_item.item = text
