"""``nictune optimize``: search a space for the best configuration, with a live progress display
on a terminal and one plain line per trial otherwise (a pipe, a CI log, systemd)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from nictune.cli._common import (
    QUIET_OPTION,
    SIM_NOTE,
    OutputMode,
    console,
    err_console,
    fmt,
    on_command_line,
    output_mode,
    parse_assignments,
    plain_line,
    print_error,
    print_json,
)
from nictune.cli.dbopt import DB_OPTION, open_db
from nictune.cli.dryrun import print_dry_run
from nictune.cli.remote import SERVER_OPTION, TOKEN_OPTION, optimize_remote
from nictune.cli.results import print_job_result, warm_summary
from nictune.cli.workload_options import (
    BIDIR_OPTION,
    BITRATE_LONG_OPTION,
    LENGTH_OPTION,
    MSG_SIZE_OPTION,
    OMIT_OPTION,
    RATE_OPTION,
    REVERSE_OPTION,
    STREAMS_OPTION,
    WORKLOAD_HELP,
    remote_workload,
    workload_options,
)
from nictune.errors import InvalidInputError
from nictune.jobs import JobRunner, JobSpec, TrialEvent, create_job, job_header, job_report
from nictune.jobs.dryrun import dry_run_job
from nictune.jobs.runner import DEFAULT_ENGINE, DEFAULT_MULTI_ENGINE, INT32_MAX
from nictune.jobs.stopping import check_stop_options, parse_duration
from nictune.jobs.trial_log import LineContext, trial_line
from nictune.measure.appliers.registry import load_checked_space
from nictune.measure.testbeds import DEFAULT_TESTBED
from nictune.optimizer import ENGINES, OBJECTIVES, get_objective
from nictune.search_spaces import builtin_names


def _parse_params(items: list[str]) -> dict[str, Any]:
    """``--param population=16`` -> ``{"population": 16}`` (JSON values, else the text)."""
    params: dict[str, Any] = {}
    for name, raw in parse_assignments(items, "--param", "NAME=VALUE, e.g. batch=4").items():
        try:
            params[name] = json.loads(raw)
        except json.JSONDecodeError:
            params[name] = raw
    return params


def register(app: typer.Typer) -> None:
    app.command("optimize")(optimize)


def optimize(
    ctx: typer.Context,
    objective: list[str] = typer.Option(
        None, "--objective", "-o", metavar="OBJECTIVE",
        help=f"What to optimise: {', '.join(OBJECTIVES)}. Repeat it for a Pareto search "
             "(-o throughput -o interrupts)."),
    testbed: str = typer.Option(DEFAULT_TESTBED, "--testbed", "-t",
                                help="sim:PROFILE (a model), veth[:NAME] or a pair YAML file."),
    workload: str = typer.Option("tcp", "--workload", "-w", help=WORKLOAD_HELP),
    space: str | None = typer.Option(None, "--space", help="Space name or YAML file (default: the testbed's)."),
    engine: str | None = typer.Option(
        None, "--engine", "-e",
        help="Search engine: " + ", ".join(sorted(ENGINES)) + f". Default: {DEFAULT_ENGINE} for one objective, "
             f"{DEFAULT_MULTI_ENGINE} (Pareto front) for several."),
    param: list[str] = typer.Option(
        [], "--param", metavar="NAME=VALUE",
        help="Engine parameter (repeatable); `nictune engines show ENGINE` lists each engine's "
             "parameters with defaults and allowed values."),
    budget: int = typer.Option(60, "--budget", "-b", help="Configurations to evaluate (cache hits included)."),
    repeats: int = typer.Option(
        3, "--repeats", "-r",
        help="Most benchmark runs per configuration. With racing a configuration is run once, the 3 best "
             "once more at the end and the recommended one this many times; with --no-racing always "
             "this many."),
    racing: bool = typer.Option(True, "--racing/--no-racing",
                                help="Adaptive repeats: spend runs only on configurations that could win "
                                     "(a final race of the best at the end of the job)."),
    warm_start: bool = typer.Option(True, "--warm-start/--no-warm-start",
                                    help="Start from earlier measurements on this testbed and workload."),
    time_limit: str | None = typer.Option(
        None, "--time-limit", metavar="DURATION",
        help="Stop before this much running time (90, 90s, 20m, 1.5h; counted over resumes): no new trial "
             "once another one and the final race would not fit."),
    patience: int | None = typer.Option(
        None, "--patience", metavar="N",
        help="Stop when N measured configurations in a row did not improve the recommendation."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the engine (random when not given)."),
    constraint: list[str] = typer.Option([], "--constraint", "-c", metavar="EXPR",
                                         help="e.g. loss<=0.1, cpu_rx_pct<=80, throughput_gbps>=30 (repeatable)."),
    noise: float | None = typer.Option(None, "--noise", help="Simulated testbeds: noise (coefficient of variation)."),
    scenario: str | None = typer.Option(None, "--scenario", help="idle or busy host."),
    duration: float | None = typer.Option(None, "--duration",
                                          help="Seconds per benchmark run, 1..3600 (default: the workload's, 10)."),
    streams: int | None = STREAMS_OPTION,
    length: int | None = LENGTH_OPTION,
    bitrate: str | None = BITRATE_LONG_OPTION,
    reverse: bool = REVERSE_OPTION,
    bidir: bool = BIDIR_OPTION,
    omit: float | None = OMIT_OPTION,
    msg_size: int | None = MSG_SIZE_OPTION,
    rate: int | None = RATE_OPTION,
    short_run: float | None = typer.Option(
        None, "--short-run", metavar="SECONDS",
        help="Short runs first: run each new configuration this many seconds, and full length only when "
             "it could still beat the best so far (e.g. 2 with 10 s runs). Off by default."),
    short_risk: float = typer.Option(
        0.05, "--short-risk", metavar="P",
        help="With --short-run: most chance of leaving a configuration at its short run when it is in "
             "fact as good as the best so far's lower bound."),
    resume: int | None = typer.Option(None, "--resume", metavar="JOB_ID", min=1, max=INT32_MAX,
                                        help="Resume a stopped job."),
    db_url: str | None = DB_OPTION,
    server: str | None = SERVER_OPTION,
    token: str | None = TOKEN_OPTION,
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document at the end."),
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="Check the job and print what its first configurations would run on each "
                                      "host; store no job, change nothing, run no benchmark."),
    quiet: bool = QUIET_OPTION,
) -> None:
    """Search for the configuration that best meets the objective, and remember every measurement.

    Ctrl-C stops after the trial in flight; resume with --resume JOB_ID. With --server the job
    is submitted to a running nictune service and followed from here. When stdout is not a
    terminal, each trial is one plain line (and so is each notice); --quiet prints only the result.
    """
    time_limit_s = parse_duration(time_limit) if time_limit is not None else None
    options = workload_options(streams=streams, length=length, bitrate=bitrate, reverse=reverse, bidir=bidir,
                               omit=omit, msg_size=msg_size, rate=rate)
    check_stop_options(time_limit_s, patience)
    mode = output_mode(quiet=quiet, json_out=json_out)
    if dry_run and (resume is not None or server is not None):
        raise InvalidInputError("--dry-run plans a new local job; it cannot go with --resume or --server",
                                field="dry_run", allowed="--dry-run without --resume and --server")
    if server is not None:
        if resume is not None:
            raise InvalidInputError("--resume is for local jobs; the service resumes its own jobs",
                                    field="resume")
        if not objective:
            raise InvalidInputError("--objective is required", field="objective", allowed=", ".join(OBJECTIVES))
        optimize_remote(server, token, {
            "testbed": testbed, "objectives": objective, "workload": remote_workload(workload),
            "workload_options": options or None, "space": _remote_space(space),
            "engine": engine,
            "engine_params": _parse_params(param), "constraints": constraint, "budget": budget,
            "repeats": repeats, "seed": seed, "noise": noise, "scenario": scenario, "duration_s": duration,
            "racing": racing, "warm_start": warm_start, "short_run_s": short_run, "short_risk": short_risk,
            "time_limit": time_limit_s, "patience": patience,
        }, mode)
        return
    spec = None
    if resume is None:
        if not objective:
            raise InvalidInputError("--objective is required (or --resume JOB_ID)", field="objective",
                                    allowed=", ".join(OBJECTIVES))
        for name in objective:
            get_objective(name)
        spec = JobSpec(objectives=objective, testbed=testbed, workload=workload, workload_options=options,
                       space=space, engine=engine,
                       engine_params=_parse_params(param), constraints=constraint, budget=budget,
                       repeats=repeats, seed=seed, noise=noise, scenario=scenario, duration_s=duration,
                       racing=racing, warm_start=warm_start, short_run_s=short_run, short_risk=short_risk,
                       time_limit_s=time_limit_s, patience=patience)
    if dry_run:
        assert spec is not None
        plan = dry_run_job(spec)
        if json_out:
            print_json(plan.as_dict())
        else:
            print_dry_run(plan)
        return
    dbe = open_db(db_url)
    if spec is not None:
        job_id = create_job(dbe, spec)  # validates first: an error is the only thing printed
        if testbed == DEFAULT_TESTBED:
            _say(mode, f"testbed: {DEFAULT_TESTBED} (default; {SIM_NOTE}). Use --testbed for a real pair.")
    else:
        assert resume is not None
        _check_resume_alone(ctx)
        job_id = resume
    info = job_header(dbe, job_id)  # the trials are read once, for the result
    if resume is not None and info["state"] in ("completed", "cancelled"):  # before its header is printed
        raise InvalidInputError(f"--resume {job_id}: job {job_id} is already {info['state']}; nothing to resume "
                                f"(see nictune history show {job_id}, or start a new job)", field="resume",
                                allowed="an interrupted or failed job")
    _say(mode, f"job {job_id}: {info['engine']} on {info['testbed']}, workload {info['workload']}, "
               f"objective {', '.join(info['objectives'])}"
               + (f", constraints {', '.join(info['constraints'])}" if info["constraints"] else "")
               + f", budget {info['budget']}, seed {info['seed']}")
    outcome = _run(dbe, job_id, info, mode)
    report = job_report(dbe, job_id)
    if json_out:
        print_json(_json_result(report))
    else:
        print_job_result(report)
    if outcome.state == "interrupted":
        err_console.print(f"interrupted: resume with  nictune optimize --resume {job_id}")
        raise typer.Exit(130)
    if outcome.state == "failed":
        print_error(f"job {job_id} failed: {report['error']}")
        raise typer.Exit(1)


def _remote_space(space: str | None) -> str | dict[str, Any] | None:
    """``--space`` for the service: a built-in name as it is, a file as its definition (the
    service reads no files of its clients), checked here first."""
    if space is None or space in builtin_names() or not Path(space).is_file():
        return space
    return load_checked_space(space)[0].definition


#: What a resumed job may be told: where its database is and how to print.
_RESUME_OPTIONS = {"resume", "db_url", "json_out", "quiet"}


def _check_resume_alone(ctx: typer.Context) -> None:
    """A resumed job runs as it was stored: an option that would change it is an error, not
    silently ignored."""
    given = [p for p in ctx.command.params if p.name not in _RESUME_OPTIONS and on_command_line(ctx, p.name)]
    if given:
        names = ", ".join(p.opts[0] for p in given)
        raise InvalidInputError(f"--resume continues the job as it was stored; {names} cannot change it "
                                "(start a new job instead)", field="resume",
                                allowed="--resume JOB_ID [--db URL] [--json] [--quiet]")


def _say(mode: OutputMode, text: str) -> None:
    """A line of the job's account (its header): styled on a terminal, plain in a pipe, none
    with --quiet or --json."""
    if mode == "live":
        console.print(text)
    elif mode == "lines":
        plain_line(text)


def _notice(mode: OutputMode) -> Callable[[str], None]:
    """Where the runner's notices go: stderr beside a live display, --quiet and --json (stdout
    holds only the result); stdout, between the trial lines, in a pipe (a log has them in order)."""
    if mode == "lines":
        return plain_line
    return lambda text: err_console.print(text)


def _run(dbe: Any, job_id: int, info: dict[str, Any], mode: OutputMode) -> Any:
    stop = threading.Event()
    if mode == "live":
        return _run_live(dbe, job_id, info, stop)
    on_trial = _print_trial_lines(LineContext.of_job(dbe, job_id)) if mode == "lines" else None
    return _run_until_done(JobRunner(dbe, on_trial=on_trial, stop=stop, on_notice=_notice(mode)), job_id)


def _print_trial_lines(context: LineContext) -> Callable[[TrialEvent], None]:
    def on_trial(ev: TrialEvent) -> None:
        plain_line(trial_line(ev, context))

    return on_trial


def _run_until_done(runner: JobRunner, job_id: int, live: Live | None = None) -> Any:
    try:
        if live is not None:
            with live:
                return runner.run(job_id)
        return runner.run(job_id)
    except KeyboardInterrupt:
        err_console.print(f"interrupted: resume with  nictune optimize --resume {job_id}")
        raise typer.Exit(130) from None


def _run_live(dbe: Any, job_id: int, info: dict[str, Any], stop: threading.Event) -> Any:
    """The job with a live display: a progress bar, the best so far and the last trials."""
    objective = get_objective(info["objectives"][0])
    progress = Progress(
        TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[best]}"),
        TimeElapsedColumn(), console=console, transient=False,
    )
    task = progress.add_task("trials", total=info["budget"], best="")
    recent: list[TrialEvent] = []

    def view() -> Table:
        grid = Table.grid()
        grid.add_row(progress)
        last = Table(box=None, show_header=True, header_style="dim")
        for col in ("trial", "source", objective.label, "loss %", "config"):
            last.add_column(col)
        for ev in recent[-5:]:
            value = fmt(objective.value(ev.metrics)) if ev.metrics else "-"
            loss = fmt(ev.metrics["loss_pct"]) if ev.metrics else "-"
            last.add_row(str(ev.number), ev.source + (f": {ev.error}" if ev.error else ""), value, loss,
                         ev.config.short_hash)
        grid.add_row(last)
        return grid

    live = Live(view(), console=console, refresh_per_second=8, transient=True)

    def on_trial(ev: TrialEvent) -> None:
        recent.append(ev)
        best = ""
        if ev.best_metrics:
            best = f"best {fmt(objective.value(ev.best_metrics))} {objective.unit} (trial {ev.best_number})"
        elif info["constraints"]:
            best = "nothing meets the constraints yet"
        progress.update(task, completed=ev.number + 1, best=best)
        live.update(view())

    runner = JobRunner(dbe, on_trial=on_trial, stop=stop, on_notice=_notice("live"))
    return _run_until_done(runner, job_id, live)


def _json_result(report: dict[str, Any]) -> dict[str, Any]:
    best, default = report.get("best"), report.get("default")
    return {
        "job_id": report["job_id"],  # one key for the job's id in every CLI document, local or --server
        "state": report["state"],
        "testbed": report["testbed"],
        "simulated": report["simulated"],
        "workload": report["workload"],
        "objectives": report["objectives"],
        "constraints": report["constraints"],
        "engine": report["engine"],
        "seed": report["seed"],
        "trials": report["trials"],
        "measured": report["measured"],
        "cached": report["cached"],
        "failed": report["failed"],
        "best": None if best is None else {
            "trial": best["number"],
            "config": report["best_config"],
            "config_hash": best["config_hash"],
            "feasible": report.get("best_feasible"),
            "metrics": best["metrics"],
            "spread": best["spread"],
        },
        "default": None if default is None else {
            "trial": default["number"], "config_hash": default["config_hash"],
            "metrics": default["metrics"], "spread": default["spread"],
        },
        "changes": report.get("changes", []),
        "recommendation": report.get("recommendation"),
        "noise": report.get("noise"),
        "runs": report.get("runs"),
        "racing": report.get("racing"),
        "race": report.get("race"),
        "short_runs": report.get("short_runs"),
        "bench_seconds": report.get("bench_seconds"),
        "warm_start": warm_summary(report.get("warm_start")),
        "engine_done_at": report.get("engine_done_at"),
        "stop_reason": report.get("stop_reason"),
        "stop_text": report.get("stop_text"),
        "time_limit_s": report.get("time_limit_s"),
        "patience": report.get("patience"),
        "elapsed_s": report.get("elapsed_s"),
        "front": [_front_row(row) for row in report.get("front") or []],
        "baselines": report.get("baselines"),
        "notices": report.get("notices", []),
    }


def _front_row(row: dict[str, Any]) -> dict[str, Any]:
    return {"trial": row["number"], "config_hash": row["config_hash"], "config": dict(row["config"]),
            "metrics": row["metrics"]}


__all__ = ["optimize", "register"]
