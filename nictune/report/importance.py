"""Which knobs explain a job's objective: fANOVA through Optuna's importance evaluator.

The job's completed trials are copied into an in-memory Optuna study (one
``optuna.trial.create_trial`` per trial, with a distribution per knob) and
:class:`optuna.importance.FanovaImportanceEvaluator` (a random forest and functional
ANOVA, from scikit-learn) says what share of the objective's variance each knob explains.

Conditional knobs (``poll_usecs`` exists only under ``rx_mode: timer``) are active in
only some trials; Optuna assesses only parameters present in every trial, so their effect
is counted in their parent's share. Knobs that never vary in the job explain nothing
and are left out.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

from nictune.report.data import JobData
from nictune.search_spaces import BoolKnob, FloatKnob, IntKnob, Knob

#: Fewer completed trials than this give no importance (a forest on a handful of points
#: says nothing).
MIN_TRIALS = 8
#: Seed of the evaluator's forest, so a report is the same every time it is made.
SEED = 0


@dataclass
class Importance:
    """Knob importances of a job.

    Attributes:
        scores: knob -> share of the objective's variance (sums to 1), most important first.
        method: how they were computed, for the report.
        trials: how many trials they were computed from.
        excluded: knobs left out, with why.
        reason: why there are no scores, when there are none.
    """

    scores: dict[str, float] = field(default_factory=dict)
    method: str = ""
    trials: int = 0
    excluded: dict[str, str] = field(default_factory=dict)
    reason: str = ""


def _distribution(knob: Knob, seen: list[Any]) -> Any:
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if isinstance(knob, IntKnob) and all(isinstance(v, int) and knob.low <= v <= knob.high for v in seen):
        if knob.power_of_two:  # 256, 512 ... : evenly spaced in log2, not on a step grid
            return IntDistribution(knob.low, knob.high, log=knob.low > 0)
        if knob.log:
            return IntDistribution(knob.low, knob.high, log=True)
        return IntDistribution(knob.low, knob.high, step=knob.step)
    if isinstance(knob, FloatKnob) and all(isinstance(v, int | float) for v in seen):
        return FloatDistribution(knob.low, knob.high, log=knob.log)
    listed = [False, True] if isinstance(knob, BoolKnob) else list(knob.values() or [])
    return CategoricalDistribution(listed + [v for v in dict.fromkeys(seen) if v not in listed])


def knob_importance(job: JobData) -> Importance:
    """fANOVA importance of every knob active in all completed trials that varies."""
    rows = [(t, job.value(t.metrics)) for t in job.completed]
    rows = [(t, v) for t, v in rows if math.isfinite(v)]
    method = (f"fANOVA (optuna.importance.FanovaImportanceEvaluator, seed {SEED}) on the "
              f"{job.objective.label} of the completed trials")
    if len(rows) < MIN_TRIALS:
        return Importance(method=method, trials=len(rows),
                          reason=f"only {len(rows)} completed trials (at least {MIN_TRIALS} needed)")
    values = [v for _, v in rows]
    if max(values) - min(values) <= 1e-12 * max(1.0, abs(max(values))):
        return Importance(method=method, trials=len(rows), reason="the objective did not vary between trials")
    excluded: dict[str, str] = {}
    names: list[str] = []
    for name in job.space.knobs:
        present = [t.config.get(name) for t, _ in rows if name in t.config]
        if len(present) < len(rows):
            excluded[name] = "conditional: active in only some trials (counted with its parent)"
        elif len({repr(v) for v in present}) < 2:
            excluded[name] = "never changed in this job"
        else:
            names.append(name)
    if not names:
        return Importance(method=method, trials=len(rows), excluded=excluded,
                          reason="no knob took more than one value in every trial")
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dists = {n: _distribution(job.space.knobs[n], [t.config[n] for t, _ in rows]) for n in names}
    frozen = [({n: t.config[n] for n in names}, v) for t, v in rows]
    study = optuna.create_study(direction=job.objective.direction)
    study.add_trials([optuna.trial.create_trial(params=p, distributions=dists, value=v) for p, v in frozen])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ExperimentalWarning and friends: not the reader's business
        scores = optuna.importance.get_param_importances(
            study, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=SEED))
    ordered = dict(sorted(((k, float(v)) for k, v in scores.items()), key=lambda kv: -kv[1]))
    return Importance(scores=ordered, method=method, trials=len(rows), excluded=excluded)


__all__ = ["MIN_TRIALS", "Importance", "knob_importance"]
