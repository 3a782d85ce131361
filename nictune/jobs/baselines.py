"""The recommendation against what a user would have had anyway: the default and the stock profiles.

One function, :func:`compare_baselines`, computes the comparison that the end of
``optimize``, ``history show``, the report and the API's job view (and so the dashboard)
show: for the default and each stock profile of the job's space (``stock: true``, e.g.
TuneD's network-throughput or ESnet's host tuning), the first objective with its interval,
the main metrics and the recommendation's relative change; a profile whose trial failed is
marked failed, one the job never reached "not measured".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from nictune.errors import NictuneError
from nictune.formatting import format_interval, format_number
from nictune.optimizer import Goal
from nictune.optimizer.racing import Noise, RacingPolicy
from nictune.search_spaces import SearchSpace

#: Metrics shown next to the objective, when a row has them.
MAIN_METRICS = ("throughput_gbps", "loss_pct", "cpu_rx_pct", "latency_p99_us")
#: Most metric columns of the comparison.
MAX_METRICS = 4


def _finite(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else None


def _metric_names(goal: Goal, rows: Sequence[Mapping[str, Any] | None]) -> list[str]:
    """The objectives' and constraints' metrics, then :data:`MAIN_METRICS`, those any row has
    (not the first objective's own metric: its value is the comparison's first column)."""
    wanted: list[str] = []
    for obj in goal.objectives:
        wanted += [obj.metric, *([obj.per] if obj.per else [])]
    wanted += [c.metric for c in goal.constraints] + list(MAIN_METRICS)
    present = {k for r in rows if r for k, v in (r.get("metrics") or {}).items() if v is not None}
    if goal.objective.per is None:
        present.discard(goal.objective.metric)
    return [m for m in dict.fromkeys(wanted) if m in present][:MAX_METRICS]


def _noise(policy: RacingPolicy, stats: Mapping[str, Any]) -> Noise:
    """The job's pooled objective noise (stored when it ended), else the policy's prior."""
    raw = (stats.get("noise") or {}).get("objective")
    if raw:
        try:
            return Noise(float(raw["cv"]), float(raw["dof"]), int(raw.get("measured_dof", 0)))
        except (KeyError, TypeError, ValueError):
            pass
    return policy.stats.pooled_noise(0.0, 0)


def _figures(policy: RacingPolicy, noise: Noise, row: Mapping[str, Any],
             metrics: list[str]) -> dict[str, Any]:
    """The objective's value with its interval, and the metrics, of a completed row."""
    values = row.get("metrics") or {}
    try:
        oriented = policy.goal.objective.oriented(values)
    except NictuneError:  # the objective's metric is missing
        oriented = -math.inf
    iv = policy.stats.shown(policy.stats.mean_interval(oriented, max(int(row.get("repeats") or 1), 1), noise))
    return {"value": _finite(iv.mean),
            "interval": {"low": _finite(iv.low), "high": _finite(iv.high), "n": iv.n, "confidence": iv.confidence},
            "metrics": {m: _finite(values.get(m)) for m in metrics}}


def _change_pct(rec: float | None, base: float | None) -> float | None:
    """The recommendation's change relative to a baseline, in percent of the baseline."""
    if rec is None or base is None or base == 0:
        return None
    return (rec - base) / abs(base) * 100.0


def compare_baselines(space: SearchSpace, goal: Goal, stats: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                      best: Mapping[str, Any] | None, known: Mapping[str, Mapping[str, Any]] | None = None,
                      ) -> dict[str, Any] | None:
    """The recommendation against the default and against each stock profile of ``space``.

    Args:
        space: the job's space (its stock profiles, its default).
        goal: the job's goal; the first objective is compared.
        stats: the job's stats (its stored recommendation and noise).
        rows: the job's trials as :func:`nictune.jobs.report.trial_rows` gives them
            (``number``, ``state``, ``config_hash``, ``metrics``, ``repeats``, ``error``).
        best: the recommended row; ``None``: nothing to compare yet (``None`` is returned).
        known: config hash -> row of the default and the stock profiles as measured on the
            job's testbed and workload when they are not trials of the job (a warm start
            knew them: figures from history, ``number`` None).

    Returns:
        ``objective`` (name, label, unit, direction), ``metrics`` (names shown),
        ``recommendation`` and ``baselines``: one entry each with ``name``, ``stock``,
        ``state`` (completed, failed, not measured), ``number``, ``config_hash``, ``value``,
        ``interval`` (low, high, n, confidence), ``metrics``, ``change_pct`` (the
        recommendation relative to it, in percent) and ``better`` (whether the
        recommendation's objective is better); stock ones add ``description``, ``source``
        and ``not_expressed``.
    """
    if best is None or not best.get("metrics"):
        return None
    policy = RacingPolicy(goal)
    noise = _noise(policy, stats)
    obj = goal.objective
    names: list[tuple[str, Any]] = [("default", space.default())]
    for pname in space.stock_profiles():
        try:
            names.append((pname, space.profile(pname)))
        except NictuneError:  # a stored space whose profile no longer validates: nothing to show
            continue
    by_hash: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_hash.setdefault(str(r["config_hash"]), []).append(r)
    found: list[tuple[str, str, Mapping[str, Any] | None, Mapping[str, Any] | None]] = []
    for name, config in names:
        mine = by_hash.get(config.hash, [])
        done = next((r for r in mine if r.get("state") == "completed" and r.get("metrics")), None)
        earlier = (known or {}).get(config.hash)
        if done is None and earlier is not None and earlier.get("metrics"):
            done = earlier
        failed = next((r for r in mine if r.get("state") == "failed"), None)
        found.append((name, config.hash, done, failed))
    metrics = _metric_names(goal, [best, *(d for _, _, d, _ in found)])
    rec = {"name": "recommendation", "number": best.get("number"), "config_hash": best.get("config_hash"),
           **_figures(policy, noise, best, metrics)}
    stored = dict(stats.get("recommendation") or {})
    if stored.get("hash") == best.get("config_hash") and stored.get("interval"):
        iv = stored["interval"]  # from every sample behind it, as the job chose it
        rec["value"] = _finite(iv.get("mean"))
        rec["interval"] = {"low": _finite(iv.get("low")), "high": _finite(iv.get("high")),
                           "n": int(iv.get("n", 0)), "confidence": float(iv.get("confidence", policy.confidence))}
    out = []
    for name, config_hash, done, failed in found:
        info = space.profile_info.get(name)
        entry: dict[str, Any] = {"name": name, "stock": bool(info and info.stock), "config_hash": config_hash,
                                 "number": None, "state": "not measured", "value": None, "interval": None,
                                 "metrics": {}, "change_pct": None, "better": None, "error": None}
        if info is not None:
            entry |= {"description": info.description, "source": list(info.source),
                      "not_expressed": list(info.not_expressed)}
        if done is not None:
            entry |= {"state": "completed", "number": done.get("number"), **_figures(policy, noise, done, metrics)}
            entry["change_pct"] = _change_pct(rec["value"], entry["value"])
            if rec["value"] is not None and entry["value"] is not None:
                sign = 1 if obj.direction == "maximize" else -1
                entry["better"] = sign * rec["value"] > sign * entry["value"]
        elif failed is not None:
            entry |= {"state": "failed", "number": failed.get("number"), "error": failed.get("error")}
        out.append(entry)
    return {"objective": obj.describe(), "metrics": metrics, "recommendation": rec, "baselines": out}


def _interval_text(entry: Mapping[str, Any]) -> str:
    iv = entry.get("interval") or {}
    low, high = iv.get("low"), iv.get("high")
    value = entry.get("value")
    if value is not None and low is not None and high is not None and high > low:
        return format_interval(value, (high - low) / 2)
    return format_number(value)


def _change_text(entry: Mapping[str, Any]) -> str:
    pct = entry.get("change_pct")
    if pct is None:
        return "-"
    word = {True: "better", False: "worse"}.get(entry.get("better"), "")  # type: ignore[arg-type]
    return f"{pct:+.1f} %" + (f" ({word})" if word and abs(pct) >= 0.05 else "")


def comparison_rows(comparison: Mapping[str, Any]) -> list[dict[str, str]]:
    """The comparison as text, one row per configuration (the recommendation first): ``name``,
    ``trial``, ``objective`` (value ± half interval), one cell per metric, ``vs`` (the
    recommendation's change relative to the row, ``+x %``) and ``note`` (a failed trial's
    error, what a stock profile cannot express). The CLI and the HTML report print these."""
    metrics = list(comparison["metrics"])
    rec = comparison["recommendation"]
    out = [{"name": "recommendation", "trial": str(rec.get("number", "-")), "objective": _interval_text(rec),
            **{m: format_number(rec["metrics"].get(m)) for m in metrics}, "vs": "", "note": ""}]
    for entry in comparison["baselines"]:
        label = entry["name"] + (" (stock)" if entry.get("stock") else "")
        trial = "-" if entry.get("number") is None else str(entry["number"])
        if entry["state"] != "completed":
            note = f"{entry['state']}" + (f": {entry['error']}" if entry.get("error") else "")
            out.append({"name": label, "trial": trial, "objective": entry["state"],
                        **{m: "-" for m in metrics}, "vs": "-", "note": note})
            continue
        missing = entry.get("not_expressed") or []
        note = f"cannot express {len(missing)} of its settings here" if missing else ""
        out.append({"name": label, "trial": trial if entry.get("number") is not None else "history",
                    "objective": _interval_text(entry),
                    **{m: format_number(entry["metrics"].get(m)) for m in metrics},
                    "vs": _change_text(entry), "note": note})
    return out
