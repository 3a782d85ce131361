"""Everything a client sends is validated first: 422 naming the field and the allowed values."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import AppFactory

from .support import submit, wait_for

MTU = {"type": "int", "low": 1500, "high": 9000, "default": 1500, "target": "mtu", "family": "ip_link"}


def mini_space(**changes: Any) -> dict[str, Any]:
    """A one-knob inline space definition."""
    return {"name": "mini", "knobs": {"mtu": dict(MTU)}} | changes


BAD_BODIES: list[tuple[str, dict[str, Any], str, str]] = [
    # (case, body, field the 422 names, a piece of its allowed values)
    ("negative budget", {"budget": -3}, "budget", ">= 1"),
    ("zero repeats", {"repeats": 0}, "repeats", ">= 1"),
    ("budget as text", {"budget": "many"}, "budget", "integer"),
    ("unknown testbed", {"testbed": "sim:nope"}, "testbed", "sim:benson-40g"),
    ("testbed file path", {"testbed": "/etc/hosts.yaml"}, "testbed", "sim:benson-40g"),
    ("unknown space", {"space": "no-such-space"}, "space", "benson-40g"),
    ("space file path", {"space": "/etc/passwd"}, "space", "benson-40g"),
    ("malformed constraint", {"constraints": ["loss <<< 3"]}, "constraints[0]", "METRIC OP NUMBER"),
    ("constraint on unknown metric", {"constraints": ["loss<1", "speed > 3"]}, "constraints[1]", "throughput_gbps"),
    ("unknown objective", {"objectives": ["speed"]}, "objectives[0]", "throughput"),
    ("unknown engine", {"engine": "magic"}, "engine", "ga"),
    ("engine parameter out of range", {"engine": "ga", "engine_params": {"population": 2}},
     "engine_params.population", "an integer from 4 to 1000"),
    ("unknown engine parameter", {"engine": "ga", "engine_params": {"colour": 3}}, "engine_params.colour",
     "population"),
    ("negative engine parameter", {"engine": "ga", "engine_params": {"population": -1}},
     "engine_params.population", "an integer from 4 to 1000"),
    ("engine parameter too large for an integer", {"engine": "ga", "engine_params": {"population": 1e308}},
     "engine_params.population", "an integer from 4 to 1000"),
    ("engine parameter as text", {"engine": "ga", "engine_params": {"population": "8"}},
     "engine_params.population", "an integer from 4 to 1000"),
    ("engine parameter as a boolean", {"engine": "ga", "engine_params": {"population": True}},
     "engine_params.population", "an integer from 4 to 1000"),
    ("engine parameter in a list", {"engine": "ga", "engine_params": {"cxpb": [0.5]}},
     "engine_params.cxpb", "a number from 0 to 1"),
    ("engine parameters that conflict", {"engine": "ga", "engine_params": {"population": 6, "elite": 6}},
     "engine_params.elite", "smaller than population"),
    ("parameter of the default engine", {"engine_params": {"batch": 0}}, "engine_params.batch", "from 1 to 64"),
    ("parameter of the default Pareto engine", {"objectives": ["throughput", "cpu"],
                                                "engine_params": {"population": 2}},
     "engine_params.population", "from 4 to 1000"),
    # Strict types: JSON true is not the integer 1, and text is neither a number nor a boolean.
    ("budget as a boolean", {"budget": True}, "budget", "integer"),
    ("budget as a numeric string", {"budget": "4"}, "budget", "integer"),
    ("repeats as a boolean", {"repeats": True}, "repeats", "integer"),
    ("seed as a numeric string", {"seed": "7"}, "seed", "integer"),
    ("seed as a fraction", {"seed": 7.5}, "seed", "integer"),
    ("racing as text", {"racing": "yes"}, "racing", "true or false"),
    ("warm start as a number", {"warm_start": 1}, "warm_start", "true or false"),
    ("noise as a boolean", {"noise": True}, "noise", "number"),
    ("duration as text", {"duration_s": "5"}, "duration_s", "number"),
    ("unknown workload", {"workload": "ftp"}, "workload", "tcp"),
    ("unknown scenario", {"scenario": "chaos"}, "scenario", "idle"),
    ("negative seed", {"seed": -1}, "seed", ">= 0"),
    ("unknown field", {"budjet": 10}, "budjet", "budget"),
    ("inline knob default out of range", {"space": mini_space(knobs={"mtu": MTU | {"default": 100}})},
     "space.knobs.mtu.default", "1500"),
    ("inline profile sets an unknown knob", {"space": mini_space(profiles={"fast": {"mtux": 9000}})},
     "space.profiles.fast.mtux", "mtu"),
    ("inline profile value out of range", {"space": mini_space(profiles={"fast": {"mtu": 99000}})},
     "space.profiles.fast.mtu", "1500"),
    ("inline knob of unknown family", {"space": mini_space(knobs={"mtu": MTU | {"family": "shell"}})},
     "space.knobs.mtu.family", "sysctl"),
    ("inline space with knobs in a list", {"space": {"name": "x", "knobs": [1, 2]}}, "space.knobs", ""),
]


@pytest.mark.parametrize(("body", "field", "allowed"), [case[1:] for case in BAD_BODIES],
                         ids=[case[0] for case in BAD_BODIES])
def test_invalid_submissions_are_422_naming_the_field(shared_api: TestClient, body: dict[str, Any], field: str,
                                                       allowed: str) -> None:
    api = shared_api
    response = api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 5} | body)

    assert response.status_code == 422, response.text
    error = response.json()
    assert error["error"] == "invalid_input"
    assert error["field"] == field, error
    assert allowed in (error["allowed"] or ""), error
    assert error["problems"] and error["problems"][0]["field"] == field
    assert api.get("/v1/jobs").json()["total"] == 0, "nothing may be stored for an invalid job"


def test_budget_above_the_service_limit(make_api: AppFactory) -> None:
    with make_api(max_budget=50) as api:
        error = api.post("/v1/jobs", json={"budget": 51}).json()
    assert error["field"] == "budget" and error["allowed"] == "1..50"


def test_malformed_json_and_oversized_bodies(make_api: AppFactory) -> None:
    with make_api(max_body_bytes=2048) as api:
        broken = api.post("/v1/jobs", content=b"{not json", headers={"Content-Type": "application/json"})
        assert broken.status_code == 422 and broken.json()["allowed"] == "a JSON document"
        huge = api.post("/v1/jobs", json={"space": {"name": "x" * 5000}})
        assert huge.status_code == 413 and huge.json()["error"] == "too_large"


def test_number_fields_take_json_integers_and_flags_take_booleans(api: TestClient) -> None:
    job = submit(api, budget=2, repeats=1, seed=3, noise=0, duration_s=5, racing=False, warm_start=False,
                 engine="ga", engine_params={"population": 4, "cxpb": 1, "elite": None})

    assert (job["budget"], job["repeats"], job["seed"], job["racing"]) == (2, 1, 3, False)
    assert job["engine_params"] == {"population": 4, "cxpb": 1, "elite": None}
    assert wait_for(api, job["id"])["state"] == "completed"


def test_a_body_that_is_not_json_says_so(shared_api: TestClient) -> None:
    response = shared_api.post("/v1/jobs", content=b"not json", headers={"Content-Type": "application/json"})

    assert response.status_code == 422, response.text
    error = response.json()
    assert (error["field"], error["allowed"]) == ("body", "a JSON document"), error
    assert "not valid JSON" in error["message"] and "[0]" not in error["message"], error
    assert error["problems"] == [{"field": "body", "message": error["message"], "allowed": "a JSON document"}]


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_json_body_not_sent_as_json_names_the_content_type(shared_api: TestClient, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    response = shared_api.post("/v1/jobs", content=b'{"testbed": "sim:benson-40g", "budget": 2}', headers=headers)

    assert response.status_code == 422, response.text
    error = response.json()
    assert (error["field"], error["allowed"]) == ("Content-Type", "application/json"), error
    assert "must be sent as application/json" in error["message"], error
    assert shared_api.get("/v1/jobs").json()["total"] == 0


def test_json_with_parameters_in_its_content_type_is_read_as_json(shared_api: TestClient) -> None:
    response = shared_api.post("/v1/jobs", content=b'{"budget": -3}',
                               headers={"Content-Type": "application/json; charset=utf-8"})

    assert response.status_code == 422 and response.json()["field"] == "budget", response.text


def test_an_inline_space_runs(api: TestClient) -> None:
    space = mini_space(knobs={"mtu": {"type": "choice", "choices": [1500, 9000], "default": 1500,
                                      "target": "mtu", "family": "ip_link"}})
    job = wait_for(api, submit(api, space=space, budget=4, engine="random")["id"])

    assert job["state"] == "completed" and job["space"] == "mini"
    assert {t["config"]["mtu"] for t in api.get(f"/v1/jobs/{job['id']}/trials").json()["items"]} <= {1500, 9000}


BAD_QUERIES: list[tuple[str, str, str, str]] = [
    ("job state", "/v1/jobs?state=bogus", "state", "completed"),
    ("job objective", "/v1/jobs?objective=speed", "objective", "throughput"),
    ("creation time", "/v1/jobs?created_after=yesterday", "created_after", "date-time"),
    ("page size", "/v1/jobs?limit=0", "limit", ">= 1"),
    ("job id", "/v1/jobs/0", "job_id", ">= 1"),
    ("job id type", "/v1/jobs/abc", "job_id", "integer"),
    ("trial sort", "/v1/jobs/1/trials?sort=speed", "sort", "-throughput_gbps"),
    ("best: missing testbed", "/v1/history/best", "testbed", "required"),
    ("best: unknown testbed", "/v1/history/best?testbed=sim:nope", "testbed", "sim:benson-40g"),
    ("best: objective", "/v1/history/best?testbed=sim:benson-40g&objective=speed", "objective", "throughput"),
    ("best: workload", "/v1/history/best?testbed=sim:benson-40g&workload=ftp", "workload", "tcp"),
    ("best: constraint", "/v1/history/best?testbed=sim:benson-40g&constraint=loss<<1", "constraint",
     "METRIC OP NUMBER"),
    ("best: top", "/v1/history/best?testbed=sim:benson-40g&top=0", "top", ">= 1"),
    ("trials: knob value out of range", "/v1/history/trials?mtu=123", "mtu", "1500"),
    ("trials: unknown knob", "/v1/history/trials?mtux=9000", "mtux", "mtu"),
    ("trials: time", "/v1/history/trials?since=noon", "since", "date-time"),
    # Valid ISO 8601 whose UTC instant falls outside the years 1..9999 (was a 500: OverflowError).
    ("creation time after year 9999 in UTC", "/v1/jobs?created_after=9999-12-31T23:59:59-05:00", "created_after",
     "9999-12-31T23:59:59Z"),
    ("creation time before year 1 in UTC", "/v1/jobs?created_after=0001-01-01T00:00:00%2B05:00", "created_after",
     "0001-01-01T00:00:00Z"),
    ("creation upper bound out of range", "/v1/jobs?created_before=9999-12-31T23:59:59-05:00", "created_before",
     "9999-12-31T23:59:59Z"),
    ("trials: since out of range", "/v1/history/trials?since=0001-01-01T00:00:00%2B05:00", "since",
     "0001-01-01T00:00:00Z"),
    ("trials: until out of range", "/v1/history/trials?until=9999-12-31T23:59:59-05:00", "until",
     "9999-12-31T23:59:59Z"),
    ("configuration hash", "/v1/configurations/abc", "config_hash", "[0-9a-fA-F]"),
]


@pytest.mark.parametrize(("url", "field", "allowed"), [case[1:] for case in BAD_QUERIES],
                         ids=[case[0] for case in BAD_QUERIES])
def test_invalid_queries_are_422_naming_the_parameter(shared_api: TestClient, url: str, field: str,
                                                      allowed: str) -> None:
    response = shared_api.get(url.replace("/v1/jobs/1/", "/v1/jobs/2147483647/"))

    assert response.status_code == 422, response.text
    assert response.json()["field"] == field, response.json()
    assert allowed in (response.json()["allowed"] or ""), response.json()


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00-05:00", "9999-12-31T23:59:59Z",
                                  "9999-12-31T18:59:59-05:00", "9999-12-31T23:59:59"])
def test_date_times_at_the_ends_of_the_calendar_are_accepted(shared_api: TestClient, when: str) -> None:
    query = {"created_after": when, "created_before": when}
    assert shared_api.get("/v1/jobs", params=query).status_code == 200
    assert shared_api.get("/v1/history/trials", params={"since": when, "until": when}).status_code == 200


def test_operator_allowed_hosts_take_built_in_spaces_only(make_api: AppFactory) -> None:
    # Refused before anything opens the testbed: no namespace, no host command.
    with make_api(testbeds=["veth:nt9"]) as api:
        inline = api.post("/v1/jobs", json={"testbed": "veth:nt9", "space": mini_space(), "budget": 2}).json()
        assert inline["field"] == "space" and "simulated testbeds only" in inline["message"]
        noise = api.post("/v1/jobs", json={"testbed": "veth:nt9", "noise": 0.1, "budget": 2}).json()
        assert noise["field"] == "noise"
        assert api.get("/v1/jobs").json()["total"] == 0


@pytest.mark.netns
def test_a_goal_the_testbed_cannot_measure_is_a_422_naming_it(make_api: AppFactory) -> None:
    from nictune.measure.testbeds.veth import VethPair
    from tests.measure.support import netns_usable, unique_name

    reason = netns_usable()
    if reason:
        pytest.skip(reason)
    name = unique_name()
    with make_api(testbeds=[f"veth:{name}"]) as api:
        response = api.post("/v1/jobs", json={"testbed": f"veth:{name}", "objectives": ["interrupts"], "budget": 2})
        assert response.status_code == 422, response.text
        body = response.json()
        assert body["field"] == "objectives" and "cannot measure interrupts_per_gb" in body["message"], body
        assert "throughput" in body["allowed"] and "interrupts" not in body["allowed"]
        assert api.get("/v1/jobs").json()["total"] == 0
    assert not VethPair(name).exists()


@pytest.mark.netns
@pytest.mark.parametrize(("space", "needle"), [
    # Knobs only the simulator can set (PF_RING's modes).
    ("nurika-pfring", "cannot set nic1_mode"),
    # Knobs this pair's devices do not have (veth: no coalescing, rings or IRQs), probed.
    ("linux-nic", "cannot set rx_mode, poll_usecs, watermark_frames, busy_poll_usecs, rx_ring"),
])
def test_a_space_the_testbed_cannot_set_is_a_422_naming_it(make_api: AppFactory, space: str, needle: str) -> None:
    from nictune.measure.testbeds.veth import VethPair
    from tests.measure.support import netns_usable, unique_name

    reason = netns_usable()
    if reason:
        pytest.skip(reason)
    name = unique_name()
    with make_api(testbeds=[f"veth:{name}"]) as api:
        response = api.post("/v1/jobs", json={"testbed": f"veth:{name}", "space": space, "budget": 2})
        assert response.status_code == 422, response.text
        body = response.json()
        assert body["field"] == "space" and f"space '{space}': veth:{name} {needle}" in body["message"], body
        assert "spaces probe" in body["allowed"], body
        assert api.get("/v1/jobs").json()["total"] == 0
    assert not VethPair(name).exists()


def test_every_problem_of_an_inline_space_is_in_the_error_body(shared_api: TestClient) -> None:
    space = mini_space(knobs={"mtu": MTU | {"default": 100, "family": "shell"},
                              "gro": {"type": "bool", "default": True, "target": "gro", "colour": "red"}},
                       constraints=5)

    response = shared_api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 5, "space": space})

    assert response.status_code == 422, response.text
    error = response.json()
    assert [p["field"] for p in error["problems"]] == [
        "space.knobs.mtu.family", "space.knobs.gro.colour", "space.constraints"]
    assert error["message"].splitlines() == [p["message"] for p in error["problems"]]
    assert error["problems"][0]["message"].startswith("inline space: knobs.mtu.family: 'shell' is not")
    assert "sysctl" in error["problems"][0]["allowed"] and "default" in error["problems"][1]["allowed"]
    assert (error["field"], error["allowed"]) == ("space.knobs.mtu.family", error["problems"][0]["allowed"])
