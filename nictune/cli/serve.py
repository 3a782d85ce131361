"""``nictune serve``: run the REST service (uvicorn) on the shared database.

Registered by :mod:`nictune.cli.main` through :func:`register`. Also runnable on its own
(``python -m nictune.cli.serve``), which the API tests use.
"""

from __future__ import annotations

import gc
import ipaddress
import logging
import signal
import socket
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import typer
from rich.text import Text

from nictune.cli._common import LogLevel, err_console, on_command_line


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_testbed(name: str) -> str:
    """A testbed the operator lets clients submit to: ``veth[:NAME]``, ``pool:NAME``, a pair
    YAML file that exists, or a simulated one (always allowed anyway).

    Raises:
        InvalidInputError: none of these, naming the option and the forms it takes.
    """
    from nictune.errors import InvalidInputError
    from nictune.executors.celery_app import POOL_PREFIX, check_pool_name
    from nictune.measure.sim import PROFILES
    from nictune.measure.testbeds import check_pair_name

    allowed = "veth, veth:NAME, pool:NAME or a pair YAML file"
    try:
        if name == "veth" or name in PROFILES:
            return name
        if name.startswith("veth:"):
            check_pair_name(name.partition(":")[2])
            return name
        if name.startswith(POOL_PREFIX):
            check_pool_name(name.removeprefix(POOL_PREFIX))
            return name
    except InvalidInputError as exc:
        raise InvalidInputError(f"--allow-testbed {name!r}: {exc}", field="--allow-testbed",
                                allowed=exc.allowed) from None
    if name.endswith((".yaml", ".yml")):
        if not Path(name).is_file():
            raise InvalidInputError(f"--allow-testbed {name!r}: no such file", field="--allow-testbed",
                                    allowed=allowed)
        return name
    raise InvalidInputError(f"--allow-testbed {name!r} is not a testbed", field="--allow-testbed", allowed=allowed)


def _check_listen(host: str, port: int) -> None:
    """Fail before uvicorn starts (exit 3 and its own log line) when the address is taken.

    Raises:
        NictuneError: the address cannot be bound.
    """
    import socket

    from nictune.errors import NictuneError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise NictuneError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            raise NictuneError(f"cannot listen on {host}:{port}: {exc.strerror or exc} "
                               "(another service on that port? choose one with --port)") from None


def _run(app: Any, host: str, port: int, log_level: str, grace_s: float) -> None:
    import uvicorn

    notifier = app.state.notifier

    class Server(uvicorn.Server):
        """uvicorn's server, ending the event streams at the first stop signal.

        uvicorn waits for open responses before it stops, and an event stream stays open
        until its job ends: without this a follower would hold the stop for minutes.
        """

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            notifier.close()
            super().handle_exit(sig, frame)

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            # Everything built so far (the app, its schemas, the libraries' modules) lives as
            # long as the service: out of the collector's sight, a full collection walks only
            # what came after. It held every thread, /healthz's too, for ~50 ms each time.
            gc.collect()
            gc.freeze()

    server = Server(uvicorn.Config(app, host=host, port=port, log_level=log_level,
                                   timeout_graceful_shutdown=int(grace_s) + 5))

    def stop(signum: int, frame: FrameType | None) -> None:
        server.should_exit = True

    # SIGTERM is how a service manager stops a service: uvicorn stops gracefully and then
    # raises the signal again, which the CLI would report as "interrupted" and exit 130. Here
    # the repeat only asks uvicorn to stop (as does a SIGTERM that comes before uvicorn
    # listens for it), and `serve` ends with 0. Ctrl-C still ends "interrupted", 130.
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        server.run()
    finally:
        signal.signal(signal.SIGTERM, previous)


def _banner(settings: Any) -> str:
    """What an operator needs first: where the dashboard is, which database, who measures."""
    from sqlalchemy.engine import make_url

    shown_host = f"[{settings.host}]" if ":" in settings.host else settings.host
    base = f"http://{shown_host}:{settings.port}"
    database = make_url(settings.database_url()).render_as_string(hide_password=True)
    lines = [f"nictune service: dashboard {base}/  API docs {base}/docs  health {base}/healthz",
             f"  database {database}", f"  executor {settings.executor}",
             f"  metrics {base}/metrics " + ("(no token needed)" if settings.metrics_public else "(read token)")]
    if settings.testbeds:
        lines.append(f"  testbeds clients may use besides the simulated ones: {', '.join(settings.testbeds)}")
    lines.append(f"  limits per token: {settings.max_pending_jobs} pending jobs, {settings.max_requests_per_token} "
                 f"requests at once ({settings.max_requests} in all), {settings.max_streams_per_token} event streams "
                 f"({settings.max_streams} in all); bodies up to {settings.max_body_bytes} bytes; "
                 f"{settings.threads()} request threads")
    lines.append("  stop with Ctrl-C (jobs left unfinished resume when the service starts again)")
    return "\n".join(lines)


def serve(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback by default)."),
    port: int = typer.Option(8080, "--port", min=1, max=65535, help="TCP port."),
    db: str | None = typer.Option(None, "--db", help="Database URL or a SQLite file's path (default: $NICTUNE_DB "
                                                   "or the per-user file)."),
    testbed: list[str] = typer.Option([], "--allow-testbed", metavar="TESTBED",
                                      help="Let clients submit to this non-simulated testbed (repeatable)."),
    max_budget: int | None = typer.Option(None, "--max-budget", min=1, help="Largest budget a client may ask for."),
    log_level: LogLevel = typer.Option(LogLevel.info, "--log-level", case_sensitive=False,
                                       help="How much to log."),
    executor: str | None = typer.Option(None, "--executor", help="local (measure in this process) or celery "
                                 "(jobs on pool:NAME go to that pool's `nictune worker` processes); default local."),
    broker: str | None = typer.Option(None, "--broker", metavar="URL",
                                      help="Celery broker for --executor celery (default: $NICTUNE_BROKER_URL, else "
                                           "the local Redis)."),
    result_backend: str | None = typer.Option(None, "--result-backend", metavar="URL",
                                              help="Redis for results and the worker registry (default: "
                                                   "$NICTUNE_RESULT_BACKEND, else the broker)."),
    metrics_public: bool = typer.Option(False, "--metrics-public",
                                        help="Serve /metrics without a token (a Prometheus scrape carries none); "
                                             "it holds counts and seconds, no job content."),
    max_pending_jobs: int | None = typer.Option(
        None, "--max-pending-jobs", metavar="N", min=1, rich_help_panel="Limits",
        help="Jobs one token may have pending or running (default 10; 429 above)."),
    max_requests_per_token: int | None = typer.Option(
        None, "--max-requests-per-token", metavar="N", min=1, rich_help_panel="Limits",
        help="Requests of one token in progress at once, event streams aside (default 8; 429 above)."),
    max_streams_per_token: int | None = typer.Option(
        None, "--max-streams-per-token", metavar="N", min=1, rich_help_panel="Limits",
        help="Event streams one token may have open (default 8)."),
    max_requests: int | None = typer.Option(
        None, "--max-requests", metavar="N", min=1, rich_help_panel="Limits",
        help="Requests in progress at once, all tokens together, event streams aside (default 64; 429 above)."),
    max_streams: int | None = typer.Option(
        None, "--max-streams", metavar="N", min=1, rich_help_panel="Limits",
        help="Event streams open at once, all tokens together (default 32)."),
    max_body_bytes: int | None = typer.Option(
        None, "--max-body-bytes", metavar="BYTES", min=1024, rich_help_panel="Limits",
        help="Largest request body accepted (default 1000000; 413 above)."),
    request_threads: int | None = typer.Option(
        None, "--request-threads", metavar="N", min=2, max=200, rich_help_panel="Limits",
        help="Worker threads serving requests (default one per CPU, 2 to 8); event streams read on at most half as "
             "many of their own."),
) -> None:
    """Run the REST service: submit, follow and query jobs over HTTP (see /docs)."""
    from nictune.api import ApiSettings, create_app
    from nictune.db import resolve_url

    # Given on the command line they win; else NICTUNE_API_HOST ... (ApiSettings), else the
    # options' defaults, which are the settings' defaults.
    overrides: dict[str, object] = {name: value for name, value in (
        ("host", host), ("port", port), ("metrics_public", metrics_public)) if on_command_line(ctx, name)}
    overrides |= {k: v for k, v in (("max_pending_jobs", max_pending_jobs),
                                    ("max_requests_per_token", max_requests_per_token), ("max_requests", max_requests),
                                    ("max_streams_per_token", max_streams_per_token), ("max_streams", max_streams),
                                    ("max_body_bytes", max_body_bytes), ("request_threads", request_threads))
                  if v is not None}
    if db is not None:
        overrides["db_url"] = str(resolve_url(db))  # a plain path is a SQLite file
    if testbed:
        overrides["testbeds"] = [_check_testbed(name) for name in testbed]
    if max_budget is not None:
        overrides["max_budget"] = max_budget
    if executor not in (None, "local", "celery"):
        from nictune.errors import InvalidInputError

        raise InvalidInputError(f"unknown executor {executor!r}", field="--executor", allowed="local, celery")
    overrides |= {k: v for k, v in (("executor", executor), ("broker_url", broker), ("result_backend", result_backend))
                  if v is not None}
    settings = ApiSettings(**overrides)  # type: ignore[arg-type]
    pools = [name for name in settings.testbeds if name.startswith("pool:")]
    if pools and settings.executor != "celery":
        from nictune.errors import InvalidInputError

        raise InvalidInputError(
            f"--allow-testbed {pools[0]}: a pool's jobs go to its workers, which only --executor celery "
            f"reaches (this service would measure with {settings.executor!r} and refuse every such job)",
            field="--allow-testbed", allowed="veth, veth:NAME or a pair YAML file with --executor local; "
            "pool:NAME with --executor celery")
    if not _is_loopback(settings.host):
        err_console.print(Text.assemble(("warning:", "yellow"), f" listening on {settings.host}: the service speaks "
                                        "plain HTTP; put it behind a TLS proxy before exposing it"), highlight=False)
    logging.basicConfig(level=log_level.value.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _check_listen(settings.host, settings.port)
    # Opened (created or upgraded) here first, so that a database that cannot be is one line
    # and exit 1, not a traceback from the service's startup.
    from nictune.db import open_database

    open_database(settings.database_url()).dispose()
    print(_banner(settings), file=sys.stderr, flush=True)  # plain: a log file keeps the URL on one line
    _run(create_app(settings), settings.host, settings.port, log_level.value, settings.shutdown_grace_s)


def register(app: typer.Typer) -> None:
    """Add ``nictune serve`` to the CLI."""
    app.command("serve")(serve)


if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess in the tests
    typer.run(serve)
