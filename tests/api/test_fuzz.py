"""Property-based fuzz of the OpenAPI schema (schemathesis) against the real server.

Every operation gets a bounded number of generated requests, valid and invalid ones,
on SQLite and on PostgreSQL; no response may be a 5xx or break the documented schema
(status, content type, body, headers), and the server log must stay free of tracebacks.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from nictune.api import ApiSettings, create_app
from nictune.api.client import Client
from nictune.db import open_database, session_scope
from nictune.db.auth import create_token

from .server import Server, running_server

pytestmark = pytest.mark.slow

#: Generated requests per operation; keeps the suite to seconds (raise it for a deeper local run).
EXAMPLES = int(os.environ.get("NICTUNE_FUZZ_EXAMPLES", "15"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance]
#: Small jobs, short event streams: the fuzzer submits jobs and follows them.
FUZZ_ENV = {"NICTUNE_API_MAX_BUDGET": "4", "NICTUNE_API_EVENTS_MAX_S": "2", "NICTUNE_API_EVENTS_POLL_S": "0.1"}


@pytest.fixture(scope="module")
def fuzz_server(shared_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    folder = tmp_path_factory.mktemp("fuzz")
    url = shared_db_url
    engine = open_database(url)
    with session_scope(engine) as s:
        _, token = create_token(s, "fuzz", "submit")
    engine.dispose()
    with running_server(url, folder / "server.log", env=FUZZ_ENV) as server:
        with Client(server.url, token) as api:  # something to find at /v1/jobs/1 and in the history
            job = api.submit_job(testbed="sim:benson-40g", budget=4, repeats=1, seed=1)
            list(api.follow_events(job["id"]))
        yield server, token
    log = (folder / "server.log").read_text()
    assert "Traceback" not in log, log


# The document the server serves, built without a server (create_app opens nothing).
CONFIG = schemathesis.Config.from_dict({"generation": {"max-examples": EXAMPLES}})
schema = schemathesis.openapi.from_dict(create_app(ApiSettings()).openapi(), config=CONFIG)


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_error_and_no_schema_violation(case: schemathesis.Case, fuzz_server: tuple[Server, str]) -> None:
    server, token = fuzz_server
    case.call_and_validate(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, checks=CHECKS,
                           timeout=30)
