"""The CLI as a client of a running `nictune serve`: submit and follow jobs, read history."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from nictune.cli._common import (
    SIM_NOTE,
    OutputMode,
    console,
    err_console,
    fmt,
    from_settings,
    plain_line,
    print_error,
    print_json,
)
from nictune.cli.results import print_best, print_job_result, print_jobs
from nictune.errors import MeasurementError, NictuneError
from nictune.jobs import TrialEvent
from nictune.jobs.trial_log import LineContext, trial_line
from nictune.optimizer import Goal, Score, get_objective
from nictune.search_spaces import Configuration, SearchSpace, builtin_names, load_space, space_from_dict

if TYPE_CHECKING:
    from nictune.api.client import Client

SERVER_OPTION = typer.Option(None, "--server", metavar="URL", callback=from_settings("server"),
                             help="Use a running nictune service (e.g. http://127.0.0.1:8080) instead of "
                                  "the local database; default: $NICTUNE_SERVER.")
TOKEN_OPTION = typer.Option(None, "--token", callback=from_settings("token"),
                            help="Bearer token for --server; default: $NICTUNE_TOKEN.")


def optimize_remote(server: str, token: str | None, fields: dict[str, Any], mode: OutputMode) -> None:
    """Submit a job to the service and follow it as a local run is shown: a live display on a
    terminal, one plain line per trial in a pipe, nothing with --quiet or --json."""
    from nictune.api.client import Client

    with Client(server, token=token) as client:
        job = client.submit_job(**fields)
        job_id = job["id"]
        _announce(job, server, mode)
        try:
            if mode == "live":
                _follow_live(client, job)
            else:
                _follow_plain(client, job, mode, _line_context(job, fields.get("space")))
        except KeyboardInterrupt:  # the job is the service's: Ctrl-C only stops following it
            err_console.print(f"stopped following job {job_id}; it goes on on {server}. See it with: nictune "
                              f"history --server {server}; cancel it in the dashboard ({server}/#/jobs/{job_id}) or "
                              f"with POST {server}/v1/jobs/{job_id}/cancel", soft_wrap=True)
            raise typer.Exit(130) from None
        final = client.get_job(job_id)
        if mode == "json":
            default = _default_trial(client, job_id)
        else:
            account = client.job_account(job_id)["account"]
    if mode == "json":
        # The service's job document, with the job's id as `job_id` (the service's `id`) and
        # the default's figures as the local document has them.
        print_json(_cli_keys(final) | {"default": default})
    else:
        print_job_result(account, server)  # what the local command prints, from the same account
    if final.get("state") != "completed":  # cancelled or failed on the service: not a success for a script
        if final.get("error"):
            print_error(f"job {job_id} {final['state']}: {final['error']}")
        raise typer.Exit(1)


def _announce(job: dict[str, Any], server: str, mode: OutputMode) -> None:
    """The job's header and the service's notices: styled on a terminal, plain lines in a pipe,
    the notices alone on stderr with --quiet, nothing with --json."""
    if mode == "json":
        return
    notices = [str(n) for n in job.get("notices") or []]
    if mode == "quiet":
        for notice in notices:
            err_console.print(notice)
        return
    header = (f"job {job['id']} submitted to {server}: {job['engine']} on {job['testbed']}"
              + (f" ({SIM_NOTE})" if job.get("simulated") else "") + f", budget {job['budget']}")
    if mode == "lines":
        for text in (header, *notices):
            plain_line(text)
        return
    console.print(header)
    for notice in notices:
        err_console.print(notice)


def _state_change(data: dict[str, Any], waiting: str | None) -> tuple[str | None, str | None]:
    """What to say of a ``state`` event (``None``: nothing), and what the job waits for now.

    Say when the job waits (a pool without a worker that takes its requests) and when it runs
    again; the bar or the lines alone would just stop."""
    state = data.get("state")
    reason = data.get("waiting_for") if state == "waiting" else None
    job_id = data.get("job_id")
    if reason and reason != waiting:
        return f"job {job_id}: {reason}", reason
    if waiting and state == "running":
        return f"job {job_id}: a worker took it; running", reason
    return None, reason


def _follow_live(client: Client, job: dict[str, Any]) -> None:
    """Follow the job's events with a progress bar and the best so far."""
    objective = get_objective(job["objectives"][0])
    progress = Progress(TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[best]}"), TimeElapsedColumn(), console=console)
    task = progress.add_task("trials", total=job["budget"], best="")
    with progress:
        waiting: str | None = None
        for ev in client.follow_events(job["id"]):
            if not isinstance(ev.data, dict):
                continue
            if ev.event == "state":
                said, waiting = _state_change(ev.data, waiting)
                if said:
                    progress.console.print(said)
                continue
            if ev.event != "trial":
                continue
            data = ev.data
            best = data.get("best") or {}
            label = ""
            if best.get("metrics"):
                label = f"best {fmt(objective.value(best['metrics']))} {objective.unit}"
            progress.update(task, completed=int(data.get("number", 0)) + 1, best=label)


def _follow_plain(client: Client, job: dict[str, Any], mode: OutputMode, context: LineContext) -> None:
    """Follow the job's events: one plain line per trial and per change of state (``lines``),
    or silently to its end (``quiet``, ``json``)."""
    waiting: str | None = None
    for ev in client.follow_events(job["id"]):
        if mode != "lines" or not isinstance(ev.data, dict):
            continue
        if ev.event == "state":
            said, waiting = _state_change(ev.data, waiting)
            if said:
                plain_line(said)
        elif ev.event == "trial":
            plain_line(trial_line(_trial_event(ev.data, context.goal), context))


def _line_context(job: dict[str, Any], space: str | dict[str, Any] | None) -> LineContext:
    """What the trial lines of a service's job need: its goal, and its space (the definition
    sent, else the built-in space of that name; unknown otherwise)."""
    goal = Goal.from_names(list(job["objectives"]), list(job.get("constraints") or []))
    found: SearchSpace | None = None
    try:
        if isinstance(space, dict):
            found = space_from_dict(space)
        elif job.get("space") in builtin_names():
            found = load_space(job["space"])
    except NictuneError:  # a space this client cannot read: the lines name no knobs
        found = None
    return LineContext(goal, found, bool(job.get("simulated")))


def _trial_event(data: dict[str, Any], goal: Goal) -> TrialEvent:
    """A ``trial`` event of the service's stream as the loop's :class:`TrialEvent`."""
    metrics = _floats(data.get("metrics"))
    failed = data.get("state") == "failed" or not metrics
    try:
        score = Score.failed() if failed else goal.score(metrics)
    except MeasurementError:
        score = Score.failed()
    config = replace(Configuration.from_values(dict(data.get("config") or {})),
                     hash=str(data.get("config_hash") or ""))
    best = data.get("best") or {}
    seconds = data.get("seconds")
    return TrialEvent(
        job_id=int(data.get("job_id", 0)), number=int(data.get("number", 0)), budget=int(data.get("budget", 0)),
        config=config, source="failed" if data.get("state") == "failed" else str(data.get("source")),
        metrics=metrics, score=score, best_number=best.get("number"), best_metrics=_floats(best.get("metrics")),
        error=data.get("error"), seconds=float(seconds) if seconds is not None else None,
    )


def _floats(metrics: dict[str, Any] | None) -> dict[str, float]:
    """The stream's metrics without its nulls (a metric the testbed does not measure)."""
    return {k: float(v) for k, v in (metrics or {}).items() if v is not None}


def _default_trial(client: Client, job_id: int) -> dict[str, Any] | None:
    """The job's figures of the default configuration, in the shape of the local document's
    ``default`` (``trial``, ``config_hash``, ``metrics``, ``spread``): the trial that measured
    it, else its earlier measurements on the testbed (``trial`` None), else ``None``."""
    found = client.job_default(job_id)
    trial, history = found.get("trial"), found.get("history")
    if trial:
        return {"trial": trial["number"], "config_hash": found["config_hash"], "metrics": trial["metrics"],
                "spread": trial.get("spread") or {}}
    if history:  # measured before this job (a warm start knew it), as the local report says
        return {"trial": None, "config_hash": found["config_hash"], "metrics": history["metrics"],
                "spread": history["spread"]}
    return None


def _cli_keys(job: dict[str, Any]) -> dict[str, Any]:
    """A service job document with the job's id under ``job_id``, the one key every CLI
    document uses for it (the service's own ``id`` left out)."""
    return {"job_id": job["id"], **{k: v for k, v in job.items() if k != "id"}}


def history_remote(server: str, token: str | None, query: dict[str, Any], json_out: bool) -> None:
    """`nictune history` through the API: list jobs."""
    from nictune.api.client import Client

    with Client(server, token=token) as client:
        page = client.list_jobs(**{k: v for k, v in query.items() if v is not None})
    items = page.get("items", page) if isinstance(page, dict) else page
    if json_out:
        print_json([_cli_keys(j) for j in items])  # as `history --json` has them
        return
    print_jobs(f"jobs on {server} (newest first)", [_job_row(j) for j in items],
               filtered=any(v is not None for k, v in query.items() if k != "limit"))


def _job_row(job: dict[str, Any]) -> dict[str, Any]:
    """One job of the API's list as a row of :func:`print_jobs`."""
    progress = job.get("progress") or {}
    return {
        "job_id": job["id"], "state": job["state"], "created_at": job.get("created_at", ""),
        "testbed": job["testbed"], "simulated": bool(job.get("simulated")), "workload": job["workload"],
        "objectives": job["objectives"], "constraints": job.get("constraints") or [], "engine": job["engine"],
        "done": progress.get("done", 0), "budget": job.get("budget"), "cached": progress.get("cached", 0),
        "result": job.get("recommendation"),
    }


def history_best_remote(server: str, token: str | None, testbed: str, workload: str, objective: str,
                        constraints: list[str], top: int, json_out: bool) -> None:
    """`nictune history best` through the API."""
    from nictune.api.client import Client

    with Client(server, token=token) as client:
        rows = client.history_best(testbed, workload=workload, objective=objective, constraints=constraints,
                                   top=top)
    items = rows.get("items", rows) if isinstance(rows, dict) else rows
    if json_out:
        print_json([{"value": row.get("objective_value"), **row} for row in items])  # and the local key
        return
    print_best(items, f"best {get_objective(objective).label} on {testbed}, workload {workload} (from {server})",
               objective, simulated=bool(rows.get("simulated")) if isinstance(rows, dict) else False)


def _measured(metrics: dict[str, Any] | None) -> dict[str, Any]:
    """The API's metrics without its nulls, as the local rows hold them (a metric the testbed
    does not measure is absent there)."""
    return {k: v for k, v in (metrics or {}).items() if v is not None}


def job_report_remote(server: str, token: str | None, job_id: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A job's account and its trial rows through the API: what ``job_account`` gives locally
    (the service builds them with it: nothing is re-shaped here)."""
    from nictune.api.client import Client

    with Client(server, token=token) as client:
        body = client.job_account(job_id)
    return dict(body["account"]), list(body["trials"])


def configuration_remote(server: str, token: str | None, config_hash: str) -> dict[str, Any]:
    """A configuration and its measurements through the API, in ``history config``'s shape."""
    from nictune.api.client import Client

    with Client(server, token=token) as client:
        body = client.configuration(config_hash)
    return {"config_hash": body["config_hash"], "config": body["config"], "measurements": [{
        "job_id": m["job_id"], "trial": m["trial_number"], "repeat": m["repeat"], "testbed": m["testbed"],
        "workload": m["workload"], "started_at": str(m["started_at"]),
        "metrics": _measured(m.get("metrics")),
    } for m in body.get("measurements") or []]}
