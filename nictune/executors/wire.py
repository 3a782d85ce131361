"""A :class:`~nictune.measure._base.TrialResult` as plain JSON data (what a task returns).

Celery tasks carry JSON only (no pickle: a worker must never unpickle what the broker
hands it), so a result travels as a dict and is rebuilt, with its timestamps, on the
service side.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from nictune.errors import MeasurementError
from nictune.measure import Sample, TrialResult


def result_to_dict(result: TrialResult) -> dict[str, Any]:
    """The JSON form of ``result`` (timestamps as ISO 8601 with their offset)."""
    return {
        "samples": [
            {"metrics": dict(s.metrics), "counters": dict(s.counters),
             "started_at": s.started_at.isoformat(), "finished_at": s.finished_at.isoformat()}
            for s in result.samples
        ],
        "snapshot": dict(result.snapshot),
        "notes": list(result.notes),
    }


def result_from_dict(raw: Mapping[str, Any]) -> TrialResult:
    """Rebuild a result from :func:`result_to_dict`'s form.

    Raises:
        MeasurementError: ``raw`` is not such a form (a worker of another version?).
    """
    try:
        samples = [
            Sample(metrics={k: float(v) for k, v in s["metrics"].items()},
                   started_at=datetime.fromisoformat(s["started_at"]),
                   finished_at=datetime.fromisoformat(s["finished_at"]),
                   counters=dict(s.get("counters") or {}))
            for s in raw["samples"]
        ]
        return TrialResult(samples=samples, snapshot=dict(raw.get("snapshot") or {}),
                           notes=[str(n) for n in raw.get("notes") or []])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise MeasurementError(f"a worker returned a malformed result ({type(exc).__name__}: {exc})") from exc
