"""The CLI as a client of a running `nictune serve`: submit and follow jobs, read history."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from nictune.cli._common import SIM_NOTE, console, err_console, fmt, print_error, print_json
from nictune.cli.results import (
    changes_table,
    default_vs_best_table,
    print_best,
    print_jobs,
    print_noise,
    print_short_runs,
    print_stop,
)
from nictune.optimizer import get_objective

if TYPE_CHECKING:
    from nictune.api.client import Client

SERVER_OPTION = typer.Option(None, "--server", metavar="URL", envvar="NICTUNE_SERVER",
                             help="Use a running nictune service (e.g. http://127.0.0.1:8080) instead of "
                                  "the local database.")
TOKEN_OPTION = typer.Option(None, "--token", envvar="NICTUNE_TOKEN", help="Bearer token for --server.")


def optimize_remote(server: str, token: str | None, fields: dict[str, Any], json_out: bool) -> None:
    """Submit a job to the service and follow it with the same progress display as a local run."""
    from nictune.api.client import Client

    with Client(server, token=token) as client:
        job = client.submit_job(**fields)
        job_id = job["id"]
        objective = get_objective(job["objectives"][0])
        if not json_out:
            console.print(f"job {job_id} submitted to {server}: {job['engine']} on {job['testbed']}"
                          + (f" ({SIM_NOTE})" if job.get("simulated") else "")
                          + f", budget {job['budget']}")
            for notice in job.get("notices") or []:
                err_console.print(notice)
        progress = Progress(TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[best]}"), TimeElapsedColumn(), console=console,
                            disable=json_out)
        task = progress.add_task("trials", total=job["budget"], best="")
        try:
            with progress:
                waiting: str | None = None
                for ev in client.follow_events(job_id):
                    if not isinstance(ev.data, dict):
                        continue
                    if ev.event == "state":
                        # Say when the job waits (a pool without a worker that takes its
                        # requests) and when it runs again; the bar alone would just stop.
                        state = ev.data.get("state")
                        reason = ev.data.get("waiting_for") if state == "waiting" else None
                        if reason and reason != waiting:
                            progress.console.print(f"job {job_id}: {reason}")
                        elif waiting and state == "running":
                            progress.console.print(f"job {job_id}: a worker took it; running")
                        waiting = reason
                        continue
                    if ev.event != "trial":
                        continue
                    data = ev.data
                    best = data.get("best") or {}
                    label = ""
                    if best.get("metrics"):
                        label = f"best {fmt(objective.value(best['metrics']))} {objective.unit}"
                    progress.update(task, completed=int(data.get("number", 0)) + 1, best=label)
        except KeyboardInterrupt:  # the job is the service's: Ctrl-C only stops following it
            err_console.print(f"stopped following job {job_id}; it goes on on {server}. See it with: nictune "
                              f"history --server {server}; cancel it in the dashboard ({server}/#/jobs/{job_id}) or "
                              f"with POST {server}/v1/jobs/{job_id}/cancel", soft_wrap=True)
            raise typer.Exit(130) from None
        final = client.get_job(job_id)
        default = _default_trial(client, job_id)
    if json_out:
        # Both keys (`id`, `job_id`) and the default's figures, as the local document has them.
        print_json({"job_id": final["id"], **final, "default": default})
    else:
        _print_remote_result(final, default)
    if final.get("state") != "completed":  # cancelled or failed on the service: not a success for a script
        if final.get("error"):
            print_error(f"job {job_id} {final['state']}: {final['error']}")
        raise typer.Exit(1)


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


def _print_remote_result(job: dict[str, Any], default: dict[str, Any] | None) -> None:
    prog = job.get("progress") or {}
    console.print(f"job {job['id']} {job['state']}: {prog.get('done', 0)} trials, {prog.get('measured', 0)} "
                  f"measured, {prog.get('cached', 0)} from the cache, {prog.get('failed', 0)} failed")
    print_stop(job)
    print_short_runs(job)
    best = job.get("best")
    if not best:
        console.print("no trial completed")
        return
    if job.get("front"):
        front = Table(title="Pareto front" + (" (simulated)" if job.get("simulated") else ""))
        names = [get_objective(name) for name in job["objectives"]]
        front.add_column("trial", justify="right")
        for obj in names:
            front.add_column(obj.label, justify="right")
        front.add_column("config")
        for row in job["front"]:
            front.add_row(str(row["number"]), *(fmt(obj.value(row["metrics"])) for obj in names),
                          row["config_hash"][:12])
        console.print(front)
    print_noise(job | {"best_feasible": (best.get("score") or {}).get("feasible")})
    if "changes" in best:
        console.print(changes_table(best["number"], best["config_hash"], best["changes"]))
    else:  # a service older than the field: every knob
        table = Table(title=f"best configuration (trial {best['number']}, {best['config_hash'][:12]})")
        table.add_column("knob")
        table.add_column("value")
        for k, v in best["config"].items():
            table.add_row(k, str(v))
        console.print(table)
    console.print(default_vs_best_table(default, best, simulated=bool(job.get("simulated"))))


def history_remote(server: str, token: str | None, query: dict[str, Any], json_out: bool) -> None:
    """`nictune history` through the API: list jobs."""
    from nictune.api.client import Client

    with Client(server, token=token) as client:
        page = client.list_jobs(**{k: v for k, v in query.items() if v is not None})
    items = page.get("items", page) if isinstance(page, dict) else page
    if json_out:
        print_json([{"job_id": j["id"], **j} for j in items])  # both keys, as `history --json` has them
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
    """A job and its trials through the API, in the shapes of ``job_report`` and
    ``trial_rows`` (what ``history show`` prints)."""
    from nictune.api.client import Client

    with Client(server, token=token) as client:
        job = client.get_job(job_id)
        items: list[dict[str, Any]] = client.job_trials(job_id, limit=None)["items"]
    rec = job.get("recommendation")
    best = job.get("best")
    number = rec["number"] if rec and rec.get("number") is not None else best["number"] if best else None
    report = {
        "job_id": job["id"], "state": job["state"], "engine": job["engine"], "testbed": job["testbed"],
        "simulated": bool(job.get("simulated")), "workload": job["workload"], "objectives": job["objectives"],
        "constraints": job.get("constraints") or [], "budget": job["budget"], "repeats": job["repeats"],
        "seed": job["seed"], "engine_done_at": job.get("engine_done_at"), "racing": bool(job.get("racing")),
        "stop_reason": job.get("stop_reason"), "stop_text": job.get("stop_text"),
        "noise": job.get("noise"), "recommendation": rec,
        "stats": {"final_race": job.get("final_race") or []}, "notices": job.get("notices") or [],
        "best": {"number": number} if number is not None else None,
        "best_feasible": (best.get("score") or {}).get("feasible") if best else None,
        "front": [{"number": f["number"], "config_hash": f["config_hash"], "metrics": f["metrics"]}
                  for f in job.get("front") or []],
    }
    rows = [{"number": t["number"], "state": t["state"], "source": t["source"], "config_hash": t["config_hash"],
             "metrics": _measured(t.get("metrics")),
             "repeats": t.get("repeats"), "cached_from": t.get("cached_from"), "error": t.get("error")}
            for t in items]
    return report, rows


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
