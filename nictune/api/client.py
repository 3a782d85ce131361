"""A small client of the REST service (httpx), for ``nictune optimize|history --server URL``.

Typical use::

    with Client("http://127.0.0.1:8080", token) as api:
        job = api.submit_job(testbed="sim:benson-40g", objectives=["throughput"], budget=60)
        for event in api.follow_events(job["id"]):
            if event.event == "trial":
                print(event.data["number"], event.data["metrics"]["throughput_gbps"])
        best = api.history_best("sim:benson-40g", workload="tcp", objective="throughput")

Errors leave the client as nictune errors, so the CLI maps them to its exit codes like
local ones: a 422 or 404 is an :class:`~nictune.errors.InvalidInputError` (with the
server's ``field`` and ``allowed``), a 409 a :class:`~nictune.errors.JobError`, anything
else (401, 403, 5xx, an unreachable server) an :class:`ApiError`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any

import httpx
from httpx_sse import EventSource, connect_sse

from nictune.api.pagination import PAGE_MAX
from nictune.errors import InvalidInputError, JobError, NictuneError
from nictune.settings import CliSettings

#: Environment variable holding the token when none is passed (``CliSettings.token``).
TOKEN_ENV = "NICTUNE_TOKEN"


class ApiError(NictuneError):
    """The service refused or failed a request (401, 403, 5xx), or could not be reached.

    Attributes:
        status: the HTTP status; ``None`` when the server could not be reached.
        error: the body's machine-readable kind (``unauthorized`` ...).
    """

    def __init__(self, message: str, *, status: int | None = None, error: str | None = None):
        super().__init__(message)
        self.status = status
        self.error = error


@dataclass(frozen=True)
class ServerEvent:
    """One server-sent event: ``trial``, ``state``, ``end`` or ``error``, its data decoded.

    ``id`` is the stream's last event id when the event came, as the SSE format keeps it: a
    trial event's own number, the last trial's before it for the other events (``None``
    before the first trial).
    """

    event: str
    data: dict[str, Any]
    id: int | None = None


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    message = str(body.get("message") or f"HTTP {response.status_code}")
    field, allowed = body.get("field"), body.get("allowed")
    if response.status_code in (404, 422):
        raise InvalidInputError(message, field=field, allowed=allowed)
    if response.status_code == 409:
        raise JobError(message)
    if response.status_code == 401 and "Authorization" not in response.request.headers:
        message += f"; give the token with --token or ${TOKEN_ENV}"
    raise ApiError(f"{response.request.method} {response.request.url.path}: {message}",
                   status=response.status_code, error=body.get("error"))


def _params(values: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        out[key] = value.isoformat() if isinstance(value, datetime) else value
    return out


def server_events(response: httpx.Response) -> Iterator[ServerEvent]:
    """The events of a ``text/event-stream`` response, parsed by httpx-sse.

    Comments (keep-alives) are skipped, and so is a blank line without data: httpx-sse
    reports one as an event once the stream has had an id, the WHATWG parser (and the
    dashboard's) dispatches nothing.

    Raises:
        httpx_sse.SSEError: the response is not ``text/event-stream`` (an ``httpx.TransportError``).
        ValueError: an event's data is not JSON.
    """
    for sse in EventSource(response).iter_sse():
        if sse.data:
            yield ServerEvent(sse.event, json.loads(sse.data), int(sse.id) if sse.id.isdigit() else None)


class Client:
    """A connection to a nictune service.

    Args:
        server: base URL, e.g. ``http://127.0.0.1:8080``.
        token: bearer token; ``$NICTUNE_TOKEN`` when ``None``.
        timeout: seconds per request (event streams wait without limit between events).
        transport: an httpx transport (tests pass an ASGI one).
    """

    def __init__(self, server: str, token: str | None = None, *, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None):
        if not server.startswith(("http://", "https://")):
            raise InvalidInputError(f"--server {server!r}: expected the service's URL, e.g. http://127.0.0.1:8080",
                                    field="server", allowed="http://HOST:PORT or https://HOST:PORT")
        token = token if token is not None else CliSettings().token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.server = server.rstrip("/")
        self._http = httpx.Client(base_url=self.server, headers=headers, timeout=timeout, transport=transport)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ApiError(f"cannot reach the nictune service at {self.server}: {exc}") from exc
        _raise_for(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        body = self._request(method, path, **kwargs).json()
        return body if isinstance(body, dict) else {"items": body}

    # ------------------------------------------------------------------ jobs
    def submit_job(self, *, testbed: str, objectives: str | Sequence[str] = ("throughput",),
                   workload: str | Mapping[str, Any] | None = None,
                   workload_options: Mapping[str, Any] | None = None,
                   space: str | Mapping[str, Any] | None = None,
                   constraints: Sequence[str] = (), engine: str | None = None,
                   engine_params: Mapping[str, Any] | None = None, budget: int | None = None,
                   repeats: int | None = None, seed: int | None = None, noise: float | None = None,
                   scenario: str | None = None, duration_s: float | None = None, racing: bool | None = None,
                   warm_start: bool | None = None, time_limit: float | str | None = None,
                   patience: int | None = None, short_run_s: float | None = None,
                   short_risk: float | None = None) -> dict[str, Any]:
        """Submit a job (``POST /v1/jobs``); returns the job (``id``, ``state``, ``links`` ...)."""
        body = _params({
            "testbed": testbed, "objectives": [objectives] if isinstance(objectives, str) else list(objectives),
            "workload": dict(workload) if isinstance(workload, Mapping) else workload,
            "workload_options": dict(workload_options) if workload_options else None,
            "space": dict(space) if isinstance(space, Mapping) else space,
            "constraints": list(constraints), "engine": engine,
            "engine_params": dict(engine_params) if engine_params else None, "budget": budget,
            "repeats": repeats, "seed": seed, "noise": noise, "scenario": scenario, "duration_s": duration_s,
            "racing": racing, "warm_start": warm_start, "time_limit": time_limit, "patience": patience,
            "short_run_s": short_run_s, "short_risk": short_risk,
        })
        return self._json("POST", "/v1/jobs", json=body)

    def get_job(self, job_id: int) -> dict[str, Any]:
        """A job with progress, best trial so far and ETA (``GET /v1/jobs/{id}``)."""
        return self._json("GET", f"/v1/jobs/{job_id}")

    def _pages(self, path: str, params: Mapping[str, Any], limit: int | None, offset: int) -> dict[str, Any]:
        """Up to ``limit`` items (every one with ``None``) from ``offset`` of a list endpoint,
        read a page of at most :data:`PAGE_MAX` at a time: the last page's body with every
        page's ``items``."""
        items: list[Any] = []
        while True:
            size = PAGE_MAX if limit is None else min(PAGE_MAX, limit - len(items))
            body = self._json("GET", path, params=_params({**params, "limit": size, "offset": offset + len(items)}))
            page = body.get("items") or []
            items += page
            if len(page) < size or (limit is not None and len(items) >= limit) or not body.get("next"):
                return {**body, "items": items}

    def list_jobs(self, *, state: str | None = None, testbed: str | None = None, workload: str | None = None,
                  objective: str | None = None, created_after: datetime | None = None,
                  created_before: datetime | None = None, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        """Up to ``limit`` jobs, newest first (``GET /v1/jobs``, page by page)."""
        return self._pages("/v1/jobs", {
            "state": state, "testbed": testbed, "workload": workload, "objective": objective,
            "created_after": created_after, "created_before": created_before}, limit, offset)

    def job_trials(self, job_id: int, *, sort: str = "number", state: str | None = None,
                   source: str | None = None, limit: int | None = 100, offset: int = 0) -> dict[str, Any]:
        """Up to ``limit`` of a job's trials (every one with ``None``); ``sort`` is a field or
        metric, ``-`` for descending."""
        return self._pages(f"/v1/jobs/{job_id}/trials", {"sort": sort, "state": state, "source": source},
                           limit, offset)

    def job_account(self, job_id: int) -> dict[str, Any]:
        """A job's whole account and its trials, ``{"account": ..., "trials": [...]}``, as
        ``nictune history show N --json`` prints them locally (``GET /v1/jobs/{id}/account``)."""
        return self._json("GET", f"/v1/jobs/{job_id}/account")

    def job_default(self, job_id: int) -> dict[str, Any]:
        """The job's default configuration and the trial that measured it, if one did
        (``GET /v1/jobs/{id}/default``)."""
        return self._json("GET", f"/v1/jobs/{job_id}/default")

    def cancel_job(self, job_id: int) -> dict[str, Any]:
        """Cancel a job; it ends after the trial in flight (``POST /v1/jobs/{id}/cancel``)."""
        return self._json("POST", f"/v1/jobs/{job_id}/cancel")

    def follow_events(self, job_id: int, *, after: int = -1, reconnects: int = 5) -> Iterator[ServerEvent]:
        """Yield the job's events until its ``end`` event (``GET /v1/jobs/{id}/events``).

        A dropped connection is resumed from the last trial received (``Last-Event-ID``),
        so no trial is missed or repeated.

        Args:
            job_id: the job.
            after: start after this trial number (-1: from the first trial).
            reconnects: how many consecutive failed connections to tolerate.
        """
        last, failures = after, 0
        while True:
            try:
                with connect_sse(self._http, "GET", f"/v1/jobs/{job_id}/events", headers={"Last-Event-ID": str(last)},
                                 timeout=httpx.Timeout(self._http.timeout.connect, read=None)) as source:
                    if source.response.status_code >= 400:
                        source.response.read()
                        _raise_for(source.response)
                    for event in server_events(source.response):
                        failures = 0
                        if event.id is not None:
                            last = event.id
                        yield event
                        if event.event == "end":
                            return
            except httpx.HTTPError as exc:
                failures += 1
                if failures > reconnects:
                    raise ApiError(f"lost the event stream of job {job_id} at {self.server}: {exc}") from exc
                time.sleep(min(0.5 * 2 ** (failures - 1), 5.0))

    # --------------------------------------------------------------- history
    def history_best(self, testbed: str, *, workload: str = "tcp", objective: str = "throughput",
                     constraints: Sequence[str] = (), top: int = 10) -> dict[str, Any]:
        """The best configurations ever measured in a context (``GET /v1/history/best``)."""
        return self._json("GET", "/v1/history/best", params=_params({
            "testbed": testbed, "workload": workload, "objective": objective,
            "constraint": list(constraints), "top": top}))

    def history_trials(self, *, testbed: str | None = None, workload: str | None = None, job_id: int | None = None,
                       since: datetime | None = None, until: datetime | None = None,
                       knobs: Mapping[str, Any] | None = None, state: str | None = "completed",
                       sort: str = "-finished_at", limit: int = 100, offset: int = 0) -> dict[str, Any]:
        """Trials across jobs; ``knobs={"mtu": 9000}`` keeps configurations with those values."""
        params = list(_params({"testbed": testbed, "workload": workload, "job_id": job_id, "since": since,
                               "until": until, "state": state, "sort": sort, "limit": limit,
                               "offset": offset}).items())
        for name, value in (knobs or {}).items():
            values = value if isinstance(value, list | tuple) else [value]
            params.extend((name, str(v).lower() if isinstance(v, bool) else str(v)) for v in values)
        return self._json("GET", "/v1/history/trials", params=params)

    def configuration(self, config_hash: str) -> dict[str, Any]:
        """A configuration and all its measurements (``GET /v1/configurations/{hash}``)."""
        return self._json("GET", f"/v1/configurations/{config_hash}")

    # --------------------------------------------------------------- catalog
    def spaces(self) -> dict[str, Any]:
        """The built-in search spaces."""
        return self._json("GET", "/v1/spaces")

    def space(self, name: str) -> dict[str, Any]:
        """One search space in detail."""
        return self._json("GET", f"/v1/spaces/{name}")

    def testbeds(self) -> dict[str, Any]:
        """Testbeds to submit to and testbeds in the history."""
        return self._json("GET", "/v1/testbeds")

    def workers(self) -> dict[str, Any]:
        """``GET /v1/workers``: the measurement workers and pools the service knows."""
        return self._json("GET", "/v1/workers")

    def health(self) -> dict[str, Any]:
        """``GET /healthz`` (needs no token)."""
        return self._json("GET", "/healthz")


# ------------------------------------------------------------- one-call helpers
def submit_job(server: str, *, token: str | None = None, **fields: Any) -> dict[str, Any]:
    """Submit a job to ``server``; ``fields`` as for :meth:`Client.submit_job`."""
    with Client(server, token) as api:
        return api.submit_job(**fields)


def follow_events(server: str, job_id: int, *, token: str | None = None, after: int = -1) -> Iterator[ServerEvent]:
    """Yield the events of job ``job_id`` on ``server`` until it ends."""
    with Client(server, token) as api:
        yield from api.follow_events(job_id, after=after)


def get_job(server: str, job_id: int, *, token: str | None = None) -> dict[str, Any]:
    """Job ``job_id`` on ``server``."""
    with Client(server, token) as api:
        return api.get_job(job_id)


def history_best(server: str, testbed: str, *, token: str | None = None, **query: Any) -> dict[str, Any]:
    """Best configurations on ``server``; ``query`` as for :meth:`Client.history_best`."""
    with Client(server, token) as api:
        return api.history_best(testbed, **query)


def history_trials(server: str, *, token: str | None = None, **query: Any) -> dict[str, Any]:
    """Trials across jobs on ``server``; ``query`` as for :meth:`Client.history_trials`."""
    with Client(server, token) as api:
        return api.history_trials(**query)
