"""Parts of a result shared by the CLI's commands, local and through ``--server``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.table import Table

from nictune.cli._common import SIM_NOTE, console, fmt
from nictune.cli.fit import fitted, fitted_bordered
from nictune.formatting import changed_text, format_interval
from nictune.jobs.baselines import comparison_rows
from nictune.metrics import METRICS, heading, label, unit
from nictune.optimizer import get_objective


def objective_heading(objective: Any) -> str:
    """A table header for an objective: its label, and its unit on a second line."""
    name = label(objective.metric) if objective.per is None else objective.label
    shown = unit(objective.metric) if objective.per is None else objective.unit
    return f"{name}\n{shown}".rstrip()


def print_front(report: dict[str, Any]) -> None:
    """The Pareto front of a multi-objective job (``job_report``'s ``front``): each member's
    objectives (with units) and what it changed from the default, the recommended one starred."""
    objectives = [get_objective(name) for name in report["objectives"]]
    n = len(report["front"])
    default = report.get("default_config") or {}
    best_no = (report.get("best") or {}).get("number")
    table = Table(title=f"Pareto front: {n} configuration{'' if n == 1 else 's'} no other beats on every objective"
                        + (" (simulated)" if report["simulated"] else ""))
    table.add_column("trial", justify="right")
    for obj in objectives:
        table.add_column(f"{objective_heading(obj)}\n({'higher' if obj.direction == 'maximize' else 'lower'} is "
                         "better)", justify="right")
    table.add_column("changed (vs default)", overflow="fold", ratio=1, min_width=24)
    for row in report["front"]:
        config = row.get("config")
        changed = changed_text(config, default) if config is not None and default else row["config_hash"][:12]
        table.add_row(str(row["number"]) + (" *" if row["number"] == best_no else ""),
                      *(fmt(obj.value(row["metrics"])) for obj in objectives), changed)
    console.print(table)
    console.print(f"  * recommended: the best {objectives[0].label} of the front; within 1 % of it, the best "
                  f"{objectives[1].label}" + (" (and so on)" if len(objectives) > 2 else ""))


def changes_table(number: int, config_hash: str, changes: list[dict[str, Any]]) -> Table:
    """The best configuration as the knobs that differ from the default (``knob_changes``)."""
    table = Table(title=f"best configuration (trial {number}, {config_hash[:12]}): knobs that differ from the "
                        "default")
    for col in ("knob", "default", "best", "unit"):
        table.add_column(col)
    for ch in changes:
        table.add_row(ch["knob"], "(inactive)" if ch["default"] is None else str(ch["default"]),
                      "(inactive)" if ch["best"] is None else str(ch["best"]), ch["unit"])
    if not changes:
        table.add_row("(none: the default is best)", "", "", "")
    return table


def print_noise(report: dict[str, Any]) -> None:
    """The recommendation's interval, a warning when it breaks a constraint (``best_feasible``
    False), and the testbed noise the job estimated."""
    rec = report.get("recommendation")
    if rec:
        console.print(f"recommended (best lower confidence bound): {rec['text']}")
    if report.get("best_feasible") is False:
        console.print("no configuration met every constraint; the best shown breaks the fewest", style="yellow")
    race = report.get("race") or {}
    if race.get("decided") is False:
        console.print(f"the final race stopped at its cap of {race.get('cap')} measurements before it was decided: "
                      "the recommendation is the best of the configurations measured to their repeats",
                      style="yellow")
    noise = report.get("noise") or {}
    obj = noise.get("objective")
    if obj:
        measured = int(obj.get("measured_dof", 0))
        source = f"estimated from {measured} degrees of freedom of repeats" if measured else "prior, no repeats yet"
        console.print(f"testbed noise: {obj['cv']:.1%} coefficient of variation ({source}; stored with the job)")


def print_engine_done(report: dict[str, Any]) -> None:
    """Why a job used fewer trials than its budget: its engine had nothing left to propose."""
    done, budget = report.get("engine_done_at"), report["budget"]
    if done is None:  # stored only when the engine stopped before the budget
        return
    size = report.get("space_size")
    small = f": the space has {size:,} configurations before constraints" if size is not None and size <= budget else ""
    console.print(f"the engine ({report['engine']}) had nothing left to propose after {done} of the {budget} "
                  f"budgeted trials{small}")


def print_short_runs(report: dict[str, Any]) -> None:
    """How short runs first went: configurations left at their short run, promoted, seconds."""
    short = report.get("short_runs")
    if not short:
        return
    seconds = report.get("bench_seconds")
    spent = (f"; {seconds:,.0f} s of benchmark runs in all" + (" (modelled, not spent)" if report.get("simulated")
                                                               else "")) if seconds else ""
    console.print(f"short runs first ({short['duration_s']:g} s, risk {short['risk']:g}): {short['screened']} "
                  f"configurations left at their short run, {short['promoted']} earned a full run{spent}")
def print_stop(report: dict[str, Any]) -> None:
    """Why a finished job stopped (``stop_text``); for an engine that ran out, with the space's
    size (:func:`print_engine_done`). A failed job's error is printed by its command."""
    reason = report.get("stop_reason")
    if reason is None or reason == "engine-done":
        print_engine_done(report)
    elif reason != "failed" and report.get("stop_text"):
        console.print(report["stop_text"])


def print_best(rows: list[dict[str, Any]], title: str, objective: str, simulated: bool = False) -> None:
    """The table of ``nictune history best``, from local rows or the API's items (``simulated``:
    the testbed is the model, and the table says so)."""
    obj = get_objective(objective)
    headers = ["rank", f"{obj.label} (90% CI)", "feasible", "measurements", "jobs", "config hash", "configuration"]
    cells = []
    for i, r in enumerate(rows, 1):
        iv = r.get("interval") or {}
        low, high = iv.get("low"), iv.get("high")
        value = r.get("objective_value", r.get("value")) or 0
        shown = format_interval(value, (high - low) / 2) if low is not None and high is not None else fmt(value)
        cells.append([str(i), shown, "yes" if r.get("feasible") else "no", str(r.get("measurements", "")),
                      ", ".join(map(str, r.get("jobs") or [])), str(r.get("config_hash", ""))[:12],
                      " ".join(f"{k}={v}" for k, v in (r.get("config") or {}).items())])
    # Cells break at spaces and after hyphens and the like, never inside a word (nictune.cli.fit).
    widths, cells, padding = fitted_bordered(headers, cells, console.width)
    table = Table(title=title, padding=(0, padding))
    for col, width in zip(headers, widths, strict=True):
        table.add_column(col, overflow="fold", width=width)
    for line in cells:
        table.add_row(*line)
    console.print(table)
    if rows:
        console.print("ranked by the interval's conservative end (a single lucky run does not outrank a mean "
                      "confirmed by repeats)")
    else:
        console.print("nothing measured there yet")
    if simulated and rows:
        console.print(SIM_NOTE)


def print_jobs(title: str, rows: list[dict[str, Any]], *, filtered: bool) -> None:
    """The jobs table of ``nictune history``, local or through ``--server``. Each row:
    ``job_id``, ``state``, ``created_at`` (ISO text), ``testbed``, ``simulated``,
    ``workload``, ``objectives``, ``constraints``, ``engine``, ``done``, ``budget``, ``cached``,
    ``result`` (the recommendation: ``objective``, ``mean``, ``low``, ``high``; or ``None``).
    ``filtered``: the query had filters, so an empty answer says that none matched."""
    # 86 columns wide for a simulated testbed (it was 125): no vertical rules, one space apart.
    # A narrower terminal breaks cells at spaces, after hyphens and the like (nictune.cli.fit), never
    # inside a word: "sim:benson-…" hid which testbed it was, "complete" / "d" was hard to read.
    table = Table(title=title, box=box.SIMPLE_HEAD, padding=0, show_edge=False)
    headers = ["job", "state", "created", "testbed", "workload", "objective", "engine", "trials", "cached", "result"]
    cells = []
    for r in rows:
        sim = r["simulated"] and not r["testbed"].startswith("sim:")
        goal = ", ".join(r["objectives"]) + (f" [{', '.join(r['constraints'])}]" if r["constraints"] else "")
        cells.append([str(r["job_id"]), r["state"], str(r["created_at"])[:16].replace("T", " "),
                      r["testbed"] + (" (sim)" if sim else ""), r["workload"], goal,
                      r["engine"], f"{r['done']}/{r['budget']}", str(r["cached"]), result_text(r.get("result"))])
    widths, cells = fitted(headers, cells, console.width - (len(headers) - 1), squeeze=True)
    for col, width in zip(headers, widths, strict=True):
        table.add_column(col, justify="right" if col in ("job", "trials", "cached", "result") else "left",
                         overflow="fold", width=width)
    for row in cells:
        table.add_row(*row)
    console.print(table)
    if not rows:
        console.print("no job matches these filters" if filtered else
                      "no jobs yet: run  nictune optimize --objective throughput")


def result_text(rec: Mapping[str, Any] | None) -> str:
    """A job's recommendation in one cell: ``39.26 ± 1.3 Gbit/s`` (its first objective, with the
    interval); ``-`` while it has none. ``rec``: ``objective`` and ``mean``/``low``/``high``."""
    if not rec or rec.get("mean") is None or rec.get("objective") is None:
        return "-"
    obj = get_objective(str(rec["objective"]))
    low, high = rec.get("low"), rec.get("high")
    value = format_interval(rec["mean"], (high - low) / 2) if low is not None and high is not None \
        else fmt(rec["mean"])
    return f"{value} {obj.unit}".rstrip()


def default_vs_best_table(default: Mapping[str, Any] | None, best: Mapping[str, Any] | None, *,
                          simulated: bool) -> Table:
    """The metrics of the default and the best trial side by side: the mean over repeats and,
    where the repeats differ, their range. Each row: ``metrics`` and ``spread`` (metric ->
    ``min``, ``max``); a missing row or metric is "-". Metrics neither measured are left out."""
    table = Table(title="default vs best: mean [min .. max] over repeats" + (" (simulated)" if simulated else ""))
    table.add_column("metric")
    table.add_column("default", justify="right")
    table.add_column("best", justify="right")

    def cell(row: Mapping[str, Any] | None, name: str) -> str:
        if not row or row["metrics"].get(name) is None:
            return "-"
        sp = (row.get("spread") or {}).get(name) or {}
        low, high = sp.get("min"), sp.get("max")
        rng = f" [{fmt(low)} .. {fmt(high)}]" if low is not None and high is not None and low != high else ""
        return fmt(row["metrics"][name]) + rng

    for name in METRICS:
        if any(row and row["metrics"].get(name) is not None for row in (default, best)):
            table.add_row(heading(name), cell(default, name), cell(best, name))
    return table


def print_baselines(report: Mapping[str, Any]) -> None:
    """The recommendation against the default and each stock profile measured in the job
    (``job_report``'s ``baselines``, :func:`nictune.jobs.baselines.compare_baselines`)."""
    comparison = report.get("baselines")
    if not comparison:
        return
    obj = comparison["objective"]
    conf = (comparison["recommendation"].get("interval") or {}).get("confidence") or 0.9
    rows = comparison_rows(comparison)
    # Nothing is cut short ("tuned-network-throughput" and "tuned-network-latency" both
    # became "tuned-netwo…" at 80 columns): a narrow terminal breaks cells after hyphens.
    headers = ["configuration", "trial", f"{obj['label']}\n{obj['unit']}".rstrip(),
               *(heading(m) for m in comparison["metrics"]), "recommended vs it"]
    cells = [[row["name"], row["trial"], row["objective"], *(row[m] for m in comparison["metrics"]), row["vs"]]
             for row in rows]
    title = (f"recommendation vs the default and the stock profiles: {obj['label']} ({obj['unit']}, "
             f"{conf:.0%} CI; {obj['direction']})" + (" (simulated)" if report.get("simulated") else ""))
    widths, cells, padding = fitted_bordered(headers, cells, console.width)
    table = Table(title=title, padding=(0, padding))
    for i, (col, width) in enumerate(zip(headers, widths, strict=True)):
        table.add_column(col, justify="left" if i == 0 else "right", width=width)
    for line in cells:
        table.add_row(*line)
    console.print(table)
    for row in rows:
        if row["note"]:
            console.print(f"  {row['name']}: {row['note']}", highlight=False)
    if any(b.get("stock") for b in comparison["baselines"]):
        console.print("  stock profiles: what users would otherwise apply (TuneD, ESnet), in this space's knobs; "
                      f"nictune spaces show {report.get('space', 'SPACE')} lists their sources and what they set")


def warm_summary(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    """How many earlier measurements a warm start reused, and whether the engine used them."""
    if not raw:
        return None
    return {"reused": int(raw.get("configs", 0)), "used_by_engine": bool(raw.get("supported"))}


def print_job_result(report: dict[str, Any], server: str | None = None) -> None:
    """What a finished job found, from its account (:func:`nictune.jobs.report.job_account`):
    counts, how it stopped, the recommendation's changes, default against best, the baselines.
    ``optimize`` prints it, locally and with ``--server`` (then ``server`` is its URL)."""
    best, default = report.get("best"), report.get("default")
    runs = f" ({report['runs']} benchmark runs)" if report.get("runs") else ""
    console.print(
        f"job {report['job_id']} {report['state']}: {report['trials']} trials, {report['measured']} measured"
        f"{runs}, {report['cached']} from the cache, {report['failed']} failed"
        + (f" ({SIM_NOTE})" if report["simulated"] else "")
    )
    warm = warm_summary(report.get("warm_start"))
    if warm is not None and warm["reused"]:
        console.print(f"warm start: {warm['reused']} configurations measured earlier on this testbed and workload "
                      + ("were reused" if warm["used_by_engine"] else f"(engine {report['engine']} cannot use them)"))
    print_stop(report)
    print_short_runs(report)
    if best is None:
        console.print("no trial completed")
        return
    if len(report["objectives"]) > 1:
        print_front(report)
    print_noise(report)
    console.print(changes_table(best["number"], best["config_hash"], report.get("changes", [])))
    console.print(default_vs_best_table(default, best, simulated=report["simulated"]))
    print_baselines(report)
    console.print(f"job id: {report['job_id']}   (nictune history show {report['job_id']}"
                  + (f" --server {server}" if server else "") + ")", soft_wrap=True)
