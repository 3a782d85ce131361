"""Issue 31, limits and checks through the service: caps on an inline space, the appliers'
rules whatever the testbed, and exports that write nothing a host would refuse."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from nictune.db import Job, open_database, session_scope
from nictune.jobs import runner

from .support import submit, wait_for

SOMAXCONN = {"type": "int", "low": 128, "high": 4096, "default": 4096, "target": "net.core.somaxconn"}


def inline(**knobs: Any) -> dict[str, Any]:
    return {"name": "mine", "knobs": knobs or {"somaxconn": dict(SOMAXCONN)}}


def test_an_inline_space_of_3000_int_knobs_is_a_422_before_any_engine_is_built(
        shared_api: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*_: Any, **__: Any) -> None:
        raise AssertionError("an engine was built for a space above the cap")

    monkeypatch.setattr(runner, "make_engine", never)
    knobs = {f"k{i}": SOMAXCONN | {"target": f"net.core.k{i}"} for i in range(3000)}

    response = shared_api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 5, "space": inline(**knobs)})

    assert response.status_code == 422, response.text
    error = response.json()
    assert (error["field"], error["allowed"]) == ("space.knobs", "at most 64 knobs"), error
    assert "3000 knobs" in error["message"] and "at most 64" in error["message"]


BAD_SPACES: list[tuple[str, dict[str, Any], str, list[str]]] = [
    ("int bound of 2**63", inline(somaxconn=SOMAXCONN | {"high": 2**63}), "space.knobs.somaxconn.high", ["2**53"]),
    ("somaxconn above the sysctl range", inline(somaxconn=SOMAXCONN | {"high": 2**40}), "space.knobs.somaxconn",
     ["4294967295"]),
    ("choices per knob", inline(q={"type": "choice", "choices": [f"q{i}" for i in range(300)], "default": "q0",
                                   "target": "net.core.default_qdisc"}), "space.knobs.q.choices", ["at most 256"]),
    ("constraints", inline() | {"constraints": ["somaxconn >= 1"] * 33}, "space.constraints", ["at most 32"]),
    ("kernel.randomize_va_space", inline(aslr={"type": "int", "low": 0, "high": 2, "default": 2,
                                               "target": "kernel.randomize_va_space"}),
     "space.knobs.aslr", ["kernel.randomize_va_space"]),
    ("kernel.yama.ptrace_scope in settings", inline(p={"type": "bool", "default": False, "target": "net.core.x",
                                                       "settings": {True: {"kernel.yama.ptrace_scope": 0}}}),
     "space.knobs.p", ["kernel.yama.ptrace_scope"]),
    ("net.ipv4.ip_forward", inline(fwd={"type": "int", "low": 0, "high": 1, "default": 0,
                                        "target": "net.ipv4.ip_forward"}),
     "space.knobs.fwd", ["net.ipv4.ip_forward", "routing or security"]),
    ("a value that is a command", inline(mtu={"type": "choice", "choices": [1500, "1500; reboot"], "default": 1500,
                                              "family": "ip_link", "target": "mtu"}),
     "space.knobs.mtu", ["'1500; reboot'"]),
]


@pytest.mark.parametrize(("definition", "field", "words"), [c[1:] for c in BAD_SPACES],
                         ids=[c[0] for c in BAD_SPACES])
def test_an_inline_space_on_a_simulated_testbed_passes_the_checks_of_spaces_validate(
        shared_api: TestClient, definition: dict[str, Any], field: str, words: list[str]) -> None:
    response = shared_api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 5, "space": definition})

    assert response.status_code == 422, response.text
    error = response.json()
    assert error["field"] == field, error
    for word in words:
        assert word in error["message"], error
    assert shared_api.get("/v1/jobs").json()["total"] == 0


def test_exports_refuse_a_driver_option_no_built_in_space_has(api: TestClient) -> None:
    space = inline(somaxconn=SOMAXCONN, evil={"type": "choice", "choices": [0, 1], "default": 1,
                                              "family": "module_param", "target": "evil_mod.opt"})
    job = wait_for(api, submit(api, space=space, budget=2, repeats=1, engine="random")["id"])
    assert job["state"] == "completed"

    tuned = api.get(f"/v1/jobs/{job['id']}/export", params={"format": "tuned"})

    assert tuned.status_code == 422, tuned.text
    assert "evil_mod.opt" in tuned.json()["message"] and "mlx4_core" in tuned.json()["allowed"], tuned.json()
    assert "[modules]" not in tuned.text


def test_the_built_in_driver_options_are_still_exported(api: TestClient) -> None:
    job = wait_for(api, submit(api, space="benson-40g", budget=2, repeats=1, engine="random")["id"])

    tuned = api.get(f"/v1/jobs/{job['id']}/export", params={"format": "tuned"})

    assert tuned.status_code == 200, tuned.text
    assert "[modules]" in tuned.text and "mlx4_core=" in tuned.text


@pytest.mark.parametrize("fmt", ["sysctl", "tuned", "script"])
def test_exports_refuse_a_sysctl_outside_the_allow_list_of_a_job_stored_before_the_checks(
        api: TestClient, db_url: str, fmt: str) -> None:
    job = wait_for(api, submit(api, space=inline(), budget=2, repeats=1, engine="random")["id"])
    bad = inline(somaxconn=SOMAXCONN | {"target": "kernel.randomize_va_space"})
    dbe = open_database(db_url)
    try:
        with session_scope(dbe) as s:
            s.execute(update(Job).where(Job.id == job["id"]).values(space_definition=bad))
    finally:
        dbe.dispose()

    response = api.get(f"/v1/jobs/{job['id']}/export", params={"format": fmt})

    assert response.status_code == 422, response.text
    assert "kernel.randomize_va_space" in response.json()["message"], response.json()


def test_the_engine_is_built_off_the_event_loop(api: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """While one submission builds its engine, the service answers others (/healthz, a read)."""
    entered, release = threading.Event(), threading.Event()
    original = runner.make_engine

    def slow(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        assert release.wait(30), "never released"
        return original(*args, **kwargs)

    monkeypatch.setattr(runner, "make_engine", slow)
    results: list[int] = []
    poster = threading.Thread(target=lambda: results.append(
        api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 2, "repeats": 1}).status_code))
    poster.start()
    try:
        assert entered.wait(30), "the submission never built its engine"
        assert api.get("/healthz").status_code == 200
        assert api.get("/v1/jobs").status_code == 200
    finally:
        release.set()
        poster.join(30)
    assert results == [201]
