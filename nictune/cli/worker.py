"""``nictune worker`` (a measurement worker bound to one testbed) and ``nictune workers`` (list them)."""

from __future__ import annotations

import logging
from typing import Any

import typer
from rich.table import Table

from nictune.cli._common import LogLevel, console, on_command_line, print_json
from nictune.cli.remote import SERVER_OPTION, TOKEN_OPTION
from nictune.errors import InvalidInputError

# Left out, they are the worker settings' (CelerySettings: $NICTUNE_BROKER_URL, $NICTUNE_RESULT_BACKEND).
BROKER_OPTION = typer.Option(None, "--broker", metavar="URL",
                             help="Celery broker: redis://HOST:6379/0 or amqp://USER:PASS@HOST:5672//; "
                                  "default: $NICTUNE_BROKER_URL, else the local Redis.")
BACKEND_OPTION = typer.Option(None, "--result-backend", metavar="URL",
                              help="Redis for results and the worker registry; default: $NICTUNE_RESULT_BACKEND, "
                                   "else the broker when it is Redis.")


def _celery_settings(broker: str | None, backend: str | None) -> Any:
    from nictune.executors.celery_app import CelerySettings

    overrides: dict[str, Any] = {}
    if broker:
        overrides["broker_url"] = broker
    if backend:
        overrides["result_backend"] = backend
    return CelerySettings(**overrides).check()


def worker(
    testbed: str = typer.Option(..., "--testbed", metavar="FILE|veth:NAME",
                                help="The testbed this worker measures on (a pair YAML file, veth:NAME, sim:...)."),
    broker: str | None = BROKER_OPTION,
    backend: str | None = BACKEND_OPTION,
    pool: str = typer.Option("default", "--pool", help="The pool this worker serves (jobs name it as pool:NAME)."),
    time_limit: float = typer.Option(900.0, "--time-limit", metavar="S",
                                     help="Seconds one measurement may take; it is then stopped and restored."),
    log_level: LogLevel = typer.Option(LogLevel.warning, "--log-level", case_sensitive=False,
                                       help="How much to log."),
) -> None:
    """Measure for the service: a Celery worker bound to one testbed, one trial at a time.

    It first restores whatever a crashed run left on the testbed, then joins the pool
    (all testbeds of a pool must report the same fingerprint) and takes work from the
    pool's queue until SIGTERM / Ctrl-C (a trial in flight is restored and handed back).
    """
    from nictune.executors.worker import WorkerConfig, run_worker

    logging.basicConfig(level=log_level.value.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cfg = WorkerConfig(testbed=testbed, pool=pool, time_limit_s=time_limit,
                       settings=_celery_settings(broker, backend), loglevel=log_level.value.upper())
    code = run_worker(cfg)
    if code:
        raise typer.Exit(code)


def workers(
    ctx: typer.Context,
    server: str | None = SERVER_OPTION,
    token: str | None = TOKEN_OPTION,
    broker: str | None = BROKER_OPTION,
    backend: str | None = BACKEND_OPTION,
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the measurement workers: testbed, pool, state, current trial, broker, last heartbeat.

    Asks the service with --server, else reads the worker registry (the result backend) directly.
    """
    if server:
        from nictune.api.client import Client

        flags = {"broker": "--broker", "backend": "--result-backend"}
        given = [flag for name, flag in flags.items() if on_command_line(ctx, name)]
        if given:  # (set in the environment, they are simply not needed)
            verb = "reads" if len(given) == 1 else "read"
            raise InvalidInputError(f"{' and '.join(given)} {verb} the worker registry directly; with --server the "
                                    "service answers from its own registry", field=given[0].lstrip("-"),
                                    allowed="--server URL, or --broker/--result-backend without --server")
        with Client(server, token=token) as client:
            body = client.workers()
    else:
        from nictune.executors.pools import Registry

        settings = _celery_settings(broker, backend)
        registry = Registry(settings.backend_url(), settings.key_prefix)
        try:
            body = {"executor": "celery", **registry.overview()}
        finally:
            registry.close()
    if json_out:
        print_json(body)
        return
    rows = body.get("workers", [])
    if not rows:
        console.print("no live worker" + (f" ({body['executor']} executor)" if body.get("executor") else ""))
    else:
        table = Table("worker", "pool", "testbed", "state", "current trial", "measured", "broker", "last heartbeat")
        for w in rows:
            current = w.get("current") or {}
            trial = f"job {current['job_id']} trial {current['trial_id']}" if current else "-"
            table.add_row(w["worker_id"], w["pool"], w["testbed"], w["state"], trial, str(w.get("measured", 0)),
                          w.get("broker") or "-", str(w.get("heartbeat_at", "")))
        console.print(table)
    for line in _pool_lines(body.get("pools", [])):
        console.print(line, highlight=False)


def _pool_lines(pools: list[dict[str, Any]]) -> list[str]:
    """One line per pinned pool: what its workers measure and how many are live (a pool
    whose workers are all gone is still pinned, and a job on it waits)."""
    out = []
    for p in pools:
        what = "simulated pair" if p.get("simulated") else f"{p.get('kind')} pair"
        live, busy = int(p.get("live_workers") or 0), int(p.get("busy_workers") or 0)
        workers = f"{live} live worker(s), {busy} busy" if live else "no live worker: a job on it waits"
        out.append(f"pool:{p['pool']}: {what}, default space {p.get('default_space')}, {workers} "
                   f"(pinned by {p.get('pinned_by')})")
    return out


def register(app: typer.Typer) -> None:
    """Add ``nictune worker`` and ``nictune workers`` to the CLI."""
    app.command("worker")(worker)
    app.command("workers")(workers)


if __name__ == "__main__":  # pragma: no cover - the tests start workers this way
    import sys

    from nictune.cli.main import main

    sys.exit(main(["worker", *sys.argv[1:]]))
