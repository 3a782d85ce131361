"""Workloads through the API (issue 30): a built-in name, its options or an inline definition;
a 422 names the field (workload_options.NAME, workload.NAME); the history takes stored names."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from .support import submit, wait_for

BAD: list[tuple[str, dict[str, Any], str, str]] = [
    ("streams out of range", {"workload_options": {"streams": 129}}, "workload_options.streams", "from 1 to 128"),
    ("streams as text", {"workload_options": {"streams": "4"}}, "workload_options.streams", "from 1 to 128"),
    ("length beyond a datagram", {"workload": "udp", "workload_options": {"length": 65508}},
     "workload_options.length", "from 16 to 65507"),
    ("bitrate unreadable", {"workload_options": {"bitrate": "fast"}}, "workload_options.bitrate", "5G, 800M"),
    ("reverse with bidir", {"workload_options": {"reverse": True, "bidir": True}}, "workload_options.bidir",
     "not both"),
    ("bidir on a model", {"workload_options": {"bidir": True}}, "bidir", "simulated"),
    ("message size without a latency part", {"workload_options": {"msg_size": 64}}, "workload_options.msg_size",
     "latency part"),
    ("message size too small", {"workload": "latency", "objectives": ["latency"],
                                "workload_options": {"msg_size": 2}}, "workload_options.msg_size", "from 14"),
    ("unknown option", {"workload_options": {"colour": 1}}, "workload_options.colour", "streams"),
    ("a file path", {"workload": "/etc/passwd.yaml"}, "workload", "inline definition"),
    ("inline with an unknown key", {"workload": {"name": "x", "protocol": "tcp", "stream": 2}}, "workload.stream",
     "streams"),
    ("inline out of range", {"workload": {"name": "x", "protocol": "udp", "omit": 90}}, "workload.omit",
     "from 0 to 60"),
    ("inline latency needs a rate", {"workload": {"name": "x", "protocol": "udp",
                                                  "latency": {"mode": "under-load"}}}, "workload.latency.rate", ""),
]


@pytest.mark.parametrize(("body", "field", "allowed"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_an_invalid_workload_is_422_naming_the_field(shared_api: TestClient, body: dict[str, Any], field: str,
                                                     allowed: str) -> None:
    response = shared_api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 2} | body)
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["field"] == field, error
    assert allowed in (error["allowed"] or ""), error
    assert shared_api.get("/v1/jobs").json()["total"] == 0


def test_options_and_inline_definitions_make_jobs_and_the_history_knows_their_names(api: TestClient) -> None:
    plain = submit(api, workload="tcp", budget=1, repeats=1)
    assert plain["workload"] == "tcp"  # a plain name works as it always did
    changed = submit(api, workload="udp", workload_options={"streams": 4, "length": 1400, "bitrate": "5G"},
                     budget=1, repeats=1, duration_s=2)
    assert changed["workload"] == "udp(-P 4 -l 1400 -b 5G)"
    inline = submit(api, workload={"name": "mine", "protocol": "tcp", "streams": 2}, budget=1, repeats=1)
    assert inline["workload"] == "mine"
    for job in (plain, changed, inline):
        assert wait_for(api, job["id"])["state"] == "completed"
    best = api.get("/v1/history/best", params={"testbed": "sim:benson-40g", "workload": "udp(-P 4 -l 1400 -b 5G)"})
    assert best.status_code == 200 and len(best.json()["items"]) == 1, best.text
    trials = api.get("/v1/history/trials", params={"workload": "mine"})
    assert trials.status_code == 200 and trials.json()["total"] == 1, trials.text
    unknown = api.get("/v1/history/best", params={"testbed": "sim:benson-40g", "workload": "udp(-P 5)"})
    assert unknown.status_code == 422 and unknown.json()["field"] == "workload"
