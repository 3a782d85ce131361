"""``nictune history``: past jobs, their trials, the best configurations ever measured."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import typer
from rich.table import Table

from nictune import db
from nictune.cli._common import SIM_NOTE, console, fmt, print_json
from nictune.cli.dbopt import DB_OPTION, open_db
from nictune.cli.fit import bordered_room, fitted, fitted_bordered
from nictune.cli.remote import (
    SERVER_OPTION,
    TOKEN_OPTION,
    configuration_remote,
    history_best_remote,
    history_remote,
    job_report_remote,
)
from nictune.cli.results import (
    objective_heading,
    print_baselines,
    print_best,
    print_front,
    print_jobs,
    print_noise,
    print_short_runs,
    print_stop,
)
from nictune.errors import InvalidInputError, NictuneError
from nictune.formatting import changed_text
from nictune.jobs import job_report, trial_rows
from nictune.jobs.runner import INT32_MAX
from nictune.measure.benchmarks.workloads import check_workload_name
from nictune.metrics import label, unit
from nictune.optimizer import OBJECTIVES, Goal, get_objective
from nictune.optimizer.racing import RacingPolicy

app = typer.Typer(
    help="Query past experiments: jobs, their trials, best configurations, one configuration.",
    invoke_without_command=True,
)


def parse_since(text: str | None) -> datetime | None:
    """``2026-11-01``, an ISO timestamp, or a relative ``7d`` / ``12h`` / ``30m``."""
    if text is None:
        return None
    units = {"d": "days", "h": "hours", "m": "minutes"}
    allowed = "YYYY-MM-DD, ISO timestamp, Nd, Nh, Nm"
    try:
        if text[:-1].isdigit() and text[-1:] in units:
            return datetime.now(UTC) - timedelta(**{units[text[-1]]: int(text[:-1])})
        when = datetime.fromisoformat(text)
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC)
    except ValueError:
        raise InvalidInputError(f"--since {text!r}: expected a date (2026-11-01), a timestamp or 7d/12h/30m",
                                field="since", allowed=allowed) from None
    except OverflowError:  # 99999999d, or a time zone that takes 9999-12-31 past the calendar
        raise InvalidInputError(f"--since {text!r}: out of the calendar's range", field="since",
                                allowed=allowed) from None


@app.callback()
def jobs(
    ctx: typer.Context,
    testbed: str | None = typer.Option(None, "--testbed", "-t", help="Only jobs on this testbed."),
    workload: str | None = typer.Option(None, "--workload", "-w",
                                        help="Only jobs with this workload (a built-in one or a name the history "
                                             "holds, e.g. 'tcp(-P 4 -l 1400)')."),
    objective: str | None = typer.Option(None, "--objective", "-o", help="Only jobs with this objective."),
    since: str | None = typer.Option(None, "--since", help="Only jobs created since (2026-11-01, 7d, 12h)."),
    state: str | None = typer.Option(None, "--state", help="Only jobs in this state."),
    limit: int = typer.Option(50, "--limit", min=1, max=10000, help="At most this many jobs."),
    db_url: str | None = DB_OPTION,
    server: str | None = SERVER_OPTION,
    token: str | None = TOKEN_OPTION,
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List past jobs, newest first (or run a sub-command: show, best, config)."""
    if ctx.invoked_subcommand is not None:
        ctx.obj = {"db_url": db_url, "server": server, "token": token}
        return
    if server is not None:
        history_remote(server, token, {"testbed": testbed, "workload": workload, "objective": objective,
                                       "state": state, "limit": limit,
                                       "created_after": parse_since(since)}, json_out)
        return
    if objective is not None:
        get_objective(objective)
    created_after = parse_since(since)
    dbe = _history_db(db_url, workload)
    with db.session_scope(dbe) as s:
        if workload is not None:  # an unknown name is a typo, not an empty result
            check_workload_name(workload, db.workload_names(s))
        rows: list[dict[str, Any]] = [{
            "job_id": j.id, "state": j.state, "created_at": j.created_at.isoformat(),
            "testbed": j.testbed.name, "simulated": j.testbed.kind == "sim", "workload": j.workload.name,
            "objectives": list(j.objectives), "constraints": list(j.constraints), "engine": j.engine,
            "budget": j.budget, "trials": len(j.trials), "stats": dict(j.stats or {}),
        } for j in db.list_jobs(s, testbed=testbed, workload=workload, objective=objective,
                                since=created_after, state=state, limit=limit)]
    if json_out:
        print_json(rows)
        return
    print_jobs("jobs (newest first)", [r | {"done": r["trials"], "cached": r["stats"].get("cached", 0),
                                            "result": _result(r["stats"])} for r in rows],
               filtered=any(v is not None for v in (testbed, workload, objective, since, state)))


#: The metrics every trial table shows besides the job's objectives, when some trial has them.
TABLE_METRICS = ("throughput_gbps", "loss_pct", "cpu_rx_pct", "latency_p50_us", "latency_p99_us", "latency_mean_us")


def _result(stats: dict[str, Any]) -> dict[str, Any] | None:
    """A stored job's recommendation as :func:`result_text` reads it (``None`` when it has none)."""
    rec = stats.get("recommendation") or {}
    interval = rec.get("interval") or {}
    if not rec.get("objective") or interval.get("mean") is None:
        return None
    return {"objective": rec["objective"], "mean": interval["mean"], "low": interval.get("low"),
            "high": interval.get("high")}


def trials_table(report: dict[str, Any], rows: list[dict[str, Any]],
                 width: int | None = None) -> tuple[Table, list[tuple[str, str]]]:
    """Every trial in order: its objectives (each with its unit), the main metrics the job
    measured (labelled, with units), and what it changed from the default configuration.

    In ``width`` columns (the console's when ``None``) cells break at spaces, hyphens and
    the like, never inside a word (:mod:`nictune.cli.fit`). Where even so the changes do not
    fit beside the figures, they are left out of the table and returned, as ``(trial,
    changes)``, for a list under it: a column squeezed past the terminal's edge was cut off."""
    objectives = [get_objective(name) for name in report["objectives"]]
    measured = {name for r in rows for name in r["metrics"]}
    own = {o.metric for o in objectives if o.per is None}
    metrics = [m for m in TABLE_METRICS if m in measured and m not in own]
    default = report.get("default_config") or {}
    headers = ["trial", "source", "runs", *(objective_heading(o) for o in objectives),
               *(f"{label(m)}\n{unit(m)}".rstrip() for m in metrics), "changed (vs default)"]
    best_no = report["best"]["number"] if report.get("best") else None
    raced_from_cache = {r["number"] for r in rows if r["cached_from"] and r["source"] == "measured"}
    cells: list[list[str]] = []
    for r in rows:
        m = r["metrics"]
        changed = changed_text(r.get("config") or {}, default) if default else r["config_hash"][:12]
        if not m:
            cells.append([str(r["number"]), r["state"], "-", *["-"] * (len(objectives) + len(metrics)), changed])
            continue
        source = "cache+race" if r["number"] in raced_from_cache else r["source"]
        cells.append([str(r["number"]) + (" *" if r["number"] == best_no else ""), source,
                      str(r.get("repeats") or "-"), *(_objective_cell(o, m) for o in objectives),
                      *(fmt(m[k]) if k in m else "-" for k in metrics), changed])
    total = console.width if width is None else width
    widths, fitted_cells = fitted(headers, cells, bordered_room(total, len(headers), 1))
    below: list[tuple[str, str]] = []
    padding = 1
    if widths[0] is None:  # the changes do not fit beside the figures: a list under the table
        headers = headers[:-1]
        below = [(c[0], c[-1]) for c in cells]
        widths, fitted_cells, padding = fitted_bordered(headers, [c[:-1] for c in cells], total)
    table = Table(padding=(0, padding))
    for col, w in zip(headers, widths, strict=True):
        right = col not in ("source", "changed (vs default)")
        table.add_column(col, justify="right" if right else "left", width=w, overflow="fold")
    for line in fitted_cells:
        table.add_row(*line)
    return table, below


def _cell(metrics: dict[str, float], name: str) -> str:
    """A metric's table cell: "-" for one the testbed does not measure (interrupts on veth)."""
    return fmt(metrics[name]) if name in metrics else "-"


def _objective_cell(objective: Any, metrics: dict[str, float]) -> str:
    try:
        return fmt(objective.value(metrics))
    except NictuneError:  # a metric it needs is missing from this trial
        return "-"


def _history_db(db_url: str | None, workload: str | None) -> Any:
    """The history's database; with none, only the built-in workloads have a name (a typo in
    one is said as such, not as a missing database)."""
    try:
        return open_db(db_url, must_exist=True)
    except InvalidInputError:
        if workload is not None:
            check_workload_name(workload, [])
        raise


def _db(ctx: typer.Context, db_url: str | None) -> Any:
    return open_db(db_url or (ctx.obj or {}).get("db_url"), must_exist=True)


@app.command("show")
def show(
    ctx: typer.Context,
    job_id: int = typer.Argument(..., min=1, max=INT32_MAX, help="Job id (see nictune history)."),
    db_url: str | None = DB_OPTION,
    server: str | None = SERVER_OPTION,
    token: str | None = TOKEN_OPTION,
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """One job: its settings and every trial in order with its metrics.

    With --server the job is read from the service, with the same table.
    """
    server = server or (ctx.obj or {}).get("server")
    if server is not None:
        report, rows = job_report_remote(server, token or (ctx.obj or {}).get("token"), job_id)
    else:
        dbe = _db(ctx, db_url)
        report = job_report(dbe, job_id)
        with db.session_scope(dbe) as s:
            rows = trial_rows(db.job_trial_summaries(s, job_id))
    if json_out:
        print_json(report | {"trials": rows})
        return
    console.print(f"job {job_id} ({report['state']}): {report['engine']} on {report['testbed']}"
                  + (f" ({SIM_NOTE})" if report["simulated"] else "")
                  + f", workload {report['workload']}, objective {', '.join(report['objectives'])}"
                  + (f", constraints {', '.join(report['constraints'])}" if report["constraints"] else "")
                  + f", budget {report['budget']}, repeats {report['repeats']}, seed {report['seed']}")
    print_stop(report)
    print_short_runs(report)
    for notice in report.get("notices") or []:
        console.print(f"note: {notice}")
    if len(report["objectives"]) > 1:
        print_front(report)
    print_noise(report)
    table, below = trials_table(report, rows)
    console.print(table)
    if below:
        console.print("changed (vs default), by trial:")
        changes = Table.grid(padding=(0, 1))
        changes.add_column(justify="right", min_width=5)
        changes.add_column()
        for number, changed in below:
            changes.add_row(number, changed)
        console.print(changes, highlight=False)
    # Errors under the table, where they can wrap: in a cell they squeezed every column.
    errors: dict[str, list[int]] = {}
    for r in rows:
        if not r["metrics"] and r["error"]:
            errors.setdefault(f"{r['state']}: {r['error']}", []).append(r["number"])
    for error, numbers in errors.items():
        console.print(f"trial{'s' if len(numbers) > 1 else ''} {_number_ranges(numbers)} {error}", highlight=False)
    finalists = [r["number"] for h in report["stats"].get("final_race") or [] for r in rows
                  if r["config_hash"] == h and r["metrics"]]
    if finalists:
        what = f"trials {', '.join(map(str, finalists))} (the best" if len(finalists) > 1 else \
            f"trial {finalists[0]} (the best"
        console.print(f"final race: {what} after the search, measured once more before the recommendation "
                      "was chosen)")
    console.print("* recommended trial" + ("  runs: benchmark runs behind the mean (adaptive repeats)"
                                           if report.get("racing") else "")
                  + ("  cache+race: answered from the cache, then measured again in the final race"
                     if any(r["cached_from"] and r["source"] == "measured" for r in rows) else ""))
    print_baselines(report)


def _number_ranges(numbers: list[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` as ``0-2, 5, 7-8``."""
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in spans)


@app.command("best")
def best(
    ctx: typer.Context,
    testbed: str = typer.Option(..., "--testbed", "-t", help="Testbed name."),
    workload: str = typer.Option("tcp", "--workload", "-w",
                                 help="Workload name: a built-in one or one the history holds (see nictune history)."),
    objective: str = typer.Option("throughput", "--objective", "-o", help=f"One of {', '.join(OBJECTIVES)}."),
    constraint: list[str] = typer.Option(
        [], "--constraint", "-c", metavar="EXPR",
        help="e.g. loss<=0.1 (repeatable): configurations whose mean meets it rank first; the others follow, "
             "marked as breaking it."),
    top: int = typer.Option(5, "--top", min=1, max=100, help="How many."),
    db_url: str | None = DB_OPTION,
    server: str | None = SERVER_OPTION,
    token: str | None = TOKEN_OPTION,
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The best configurations ever measured on a testbed under a workload, across jobs."""
    goal = Goal.from_names([objective], constraint)
    server = server or (ctx.obj or {}).get("server")
    if server is not None:
        history_best_remote(server, token or (ctx.obj or {}).get("token"), testbed, workload, objective,
                            constraint, top, json_out)
        return
    rows = best_configurations(_history_db(db_url or (ctx.obj or {}).get("db_url"), workload), testbed, workload,
                               goal, top)
    if json_out:
        print_json(rows)
        return
    print_best(rows, f"best {goal.objective.label} on {testbed}, workload {workload}", objective,
               simulated=testbed.startswith("sim:"))


def best_configurations(dbe: Any, testbed: str, workload: str, goal: Goal, top: int) -> list[dict[str, Any]]:
    """The ``top`` configurations measured on ``testbed`` under ``workload``, ranked as
    ``GET /v1/history/best`` ranks them (:mod:`nictune.jobs.best`): by the mean over all their
    measurements and its interval, per testbed fingerprint."""
    from nictune.jobs.best import complete, ranked_rows, ranking

    policy = RacingPolicy(goal)
    with db.session_scope(dbe) as s:
        check_workload_name(workload, db.workload_names(s))  # a typo is an error, not an empty ranking
        chosen = complete(s, policy, ranking(s, policy, testbed, workload, top), testbed, workload)
        return [{
            "config_hash": r.config.hash, "config": json.loads(r.config.canonical), "metrics": r.candidate.metrics,
            "value": goal.objective.value(r.candidate.metrics),
            "objective_value": goal.objective.value(r.candidate.metrics),  # the service's key
            "interval": r.interval.as_dict() | {"noise_cv": r.noise.cv}, "feasible": r.score.feasible,
            "measurements": r.candidate.measurements, "jobs": r.jobs,
        } for r in ranked_rows(s, policy, chosen)]


@app.command("config")
def config(
    ctx: typer.Context,
    config_hash: str = typer.Argument(..., metavar="HASH", help="Configuration hash (or a unique prefix)."),
    db_url: str | None = DB_OPTION,
    server: str | None = SERVER_OPTION,
    token: str | None = TOKEN_OPTION,
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Every measurement of one configuration, on every testbed and workload."""
    server = server or (ctx.obj or {}).get("server")
    data: dict[str, Any]
    if server is not None:
        data = configuration_remote(server, token or (ctx.obj or {}).get("token"), config_hash)
    else:
        dbe = _db(ctx, db_url)
        with db.session_scope(dbe) as s:
            cfg = db.resolve_configuration(s, config_hash)
            data = {"config_hash": cfg.hash, "config": json.loads(cfg.canonical), "measurements": [{
                "job_id": job.id, "trial": trial.number, "repeat": m.repeat, "testbed": job.testbed.name,
                "workload": job.workload.name, "started_at": m.started_at.isoformat(), "metrics": dict(m.metrics),
            } for m, trial, job in db.configuration_measurements(s, cfg.hash)]}
    rows: list[dict[str, Any]] = data["measurements"]
    if json_out:
        print_json(data)
        return
    console.print(f"configuration {data['config_hash']}: {json.dumps(data['config'])}")
    table = Table()
    measured = {name for r in rows for name in r["metrics"]}
    shown = [k for k in ("throughput_gbps", "loss_pct", "interrupts_per_s", *TABLE_METRICS[3:]) if k in measured]
    for col in ("job", "trial", "repeat", "testbed", "workload"):
        table.add_column(col)
    for k in shown:
        table.add_column(f"{label(k)}\n{unit(k)}".rstrip(), justify="right")
    table.add_column("when")
    for r in rows:
        m = r["metrics"]
        table.add_row(str(r["job_id"]), str(r["trial"]), str(r["repeat"]), r["testbed"], r["workload"],
                      *(_cell(m, k) for k in shown), r["started_at"][:19])
    console.print(table)
