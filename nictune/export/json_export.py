"""``--format json``: the canonical configuration with its metrics, job, testbed and objective."""

from __future__ import annotations

import json
from typing import Any

from nictune import __version__
from nictune.export.source import ExportSource
from nictune.optimizer import get_objective
from nictune.report.data import SIMULATED_NOTE

#: Bumped when a field changes meaning.
FORMAT_VERSION = 1


def export_document(src: ExportSource) -> dict[str, Any]:
    """The exported document as plain data."""
    metrics = {
        name: {"mean": mean, **{k: v for k, v in src.spread.get(name, {}).items()}}
        for name, mean in src.metrics.items()
    }
    return {
        "format": "nictune-export",
        "format_version": FORMAT_VERSION,
        "nictune_version": __version__,
        "job_id": src.job_id,
        "job_state": src.job_state,
        "trial": src.trial,
        "best": src.is_best,
        "testbed": {"name": src.testbed, "simulated": src.simulated,
                    **({"note": SIMULATED_NOTE} if src.simulated else {})},
        "notices": list(src.notices),
        "workload": src.workload,
        "engine": src.engine,
        "objective": get_objective(src.objectives[0]).describe(),
        "objectives": src.objectives,
        "constraints": src.constraints,
        "feasible": src.feasible,
        "configuration": dict(sorted(src.config.items())),
        "configuration_hash": src.config_hash,
        "space": src.space.name,
        "repeats": src.repeats,
        "metrics": metrics,
        "gain": {k: v for k, v in src.gain.items() if k != "label"},
        "settings": [
            {"knob": i.knob, "family": i.family.value, "target": i.target,
             "value": list(i.value) if isinstance(i.value, tuple) else i.value,
             "index": i.index, "device": i.device}
            for i in src.items()
        ],
    }


def render_json(src: ExportSource) -> str:
    """The document as indented JSON (non-finite numbers as ``null``)."""
    def clean(x: Any) -> Any:
        if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x

    return json.dumps(clean(export_document(src)), indent=2, allow_nan=False) + "\n"


__all__ = ["FORMAT_VERSION", "export_document", "render_json"]
