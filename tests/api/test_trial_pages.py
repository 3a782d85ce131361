"""A job's trial pages sorted on the trials' metric columns: the same order as the summaries'
figures give (missing ones last, ties by number), every trial once across the pages, on
SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import json

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, delete, func, select

from nictune.api.queries.trials import (
    TrialFilters,
    decode_cursor,
    encode_cursor,
    ids_after,
    landmark_page,
    page_ids,
    trials_by_ids,
    trials_page,
)
from nictune.api.schemas.trials import TrialPage
from nictune.db import (
    Job,
    Trial,
    TrialItem,
    TrialLandmark,
    add_measurements,
    complete_trial,
    delete_job,
    fail_trial,
    session_scope,
    set_job_state,
    start_trial,
)
from nictune.db.landmarks import INDEX_ORDERS, compute_landmarks, stored_landmarks
from nictune.errors import InvalidInputError
from tests.api.support import submit, wait_for
from tests.db.support import FakeSample, add_configuration, add_job, add_testbed, add_workload, sample

# number -> throughput of a completed trial (None: failed, no figures); 9.0 three times (ties).
FIGURES: dict[int, float | None] = {0: 5.0, 1: 9.0, 2: None, 3: 9.0, 4: 1.5, 5: None, 6: 9.0, 7: 12.25, 8: 0.0}


def _history(engine: Engine) -> int:
    with session_scope(engine) as s:
        job = add_job(s, add_testbed(s), add_workload(s))
        other = add_job(s, add_testbed(s), add_workload(s))  # the other job's trials never show
        for number, value in FIGURES.items():
            for owner in (job, other):
                trial = start_trial(s, owner, number, add_configuration(s, f"c{number}"))
                if value is None:
                    fail_trial(s, trial, "iperf3 exited with status 1")
                else:
                    samples: list[FakeSample] = [sample(value, loss_pct=10 - value)]
                    complete_trial(s, trial, samples, "measured",
                                   {"metrics": {"throughput_gbps": value, "loss_pct": 10 - value}})
        return job.id


def _expected(descending: bool, metric: str = "throughput_gbps") -> list[int]:
    def figure(value: float | None) -> float | None:
        return None if value is None else (value if metric == "throughput_gbps" else 10 - value)

    present = [(figure(v), n) for n, v in FIGURES.items() if v is not None]
    present.sort(key=lambda t: (-t[0] if descending else t[0], t[1]))  # type: ignore[operator]
    return [n for _, n in present] + [n for n, v in FIGURES.items() if v is None]


@pytest.mark.parametrize("sort", ["-throughput_gbps", "throughput_gbps", "-loss_pct", "loss_pct"])
def test_pages_sorted_by_a_metric_column_follow_the_figures(engine: Engine, sort: str) -> None:
    job_id = _history(engine)
    metric = sort.lstrip("-")
    seen: list[int] = []
    with session_scope(engine) as s:
        for offset in range(0, 12, 4):
            rows, total = trials_page(s, TrialFilters(job_id=job_id), sort, 4, offset)
            assert total == len(FIGURES)
            assert all(r.job_id == job_id and r.config_hash == f"c{r.number}" for r in rows)
            seen += [r.number for r in rows]
        assert seen == _expected(sort.startswith("-"), metric)
        completed, total = trials_page(s, TrialFilters(job_id=job_id, state="completed"), sort, 100, 0)
        assert total == 7 and [r.number for r in completed] == _expected(sort.startswith("-"), metric)[:7]
        # The same order across jobs (the joined query), for the rows of this job.
        across, _ = trials_page(s, TrialFilters(testbed="bed-a", state="completed"), sort, 100, 0)
        assert [r.number for r in across if r.job_id == job_id] == [r.number for r in completed]


@pytest.mark.parametrize("sort", ["-throughput_gbps", "throughput_gbps", "-loss_pct", "number", "-number"])
def test_keyset_pages_give_the_offset_order(engine: Engine, sort: str) -> None:
    job_id = _history(engine)
    filters = TrialFilters(job_id=job_id)
    with session_scope(engine) as s:
        by_offset, _ = trials_page(s, filters, sort, 100, 0)
        seen: list[int] = []
        position = None
        for _ in range(len(FIGURES)):  # pages of 2: the cursor crosses ties and the trials without figures
            rows = trials_by_ids(s, ids_after(s, filters, sort, position, 2))
            if not rows:
                break
            seen += [r.number for r in rows]
            position = decode_cursor(encode_cursor(sort, rows[-1]), sort)
        assert seen == [r.number for r in by_offset] and len(seen) == len(FIGURES)


@pytest.mark.parametrize("sort", ["-throughput_gbps", "-loss_pct", "number", "-number"])
def test_pages_from_landmarks_are_the_offset_pages(engine: Engine, sort: str) -> None:
    # A finished job's page starts at the landmark before it (every few trials, and the first
    # without a figure): at every offset and size, and across ties and missing figures, it
    # must be the page OFFSET gives.
    job_id = _history(engine)
    filters = TrialFilters(job_id=job_id)
    with session_scope(engine) as s:
        for every in (1, 2, 3, 100):
            marks = compute_landmarks(s, job_id, sort, every)
            assert marks.total == len(FIGURES) and marks.positions[0] == 0
            if sort in ("-throughput_gbps", "-loss_pct"):  # the first trial without a figure is one
                assert 7 in marks.positions
            for limit in (1, 2, 4, 50):
                for offset in range(len(FIGURES) + 2):
                    expected = page_ids(s, filters, sort, limit, offset)
                    page = landmark_page(s, job_id, sort, marks, limit, offset)
                    assert [i for i, _ in page] == expected, (every, limit, offset)
                    # Each with its stored item: the failed trials' too, none for another id.
                    items = dict(s.execute(select(TrialItem.trial_id, TrialItem.item)
                                           .where(TrialItem.trial_id.in_(expected))).all())
                    assert dict(page) == items and len(items) == len(expected)
        assert compute_landmarks(s, job_id + 1000, sort).total == 0


def test_a_finished_job_keeps_its_landmarks_and_a_resumed_one_drops_them(engine: Engine) -> None:
    job_id = _history(engine)
    with session_scope(engine) as s:
        job = s.get(Job, job_id)
        assert job is not None
        set_job_state(s, job, "running")
        assert s.scalar(select(func.count()).select_from(TrialLandmark)) == 0
        set_job_state(s, job, "completed")
        for sort in INDEX_ORDERS:
            assert stored_landmarks(s, job_id, sort) == compute_landmarks(s, job_id, sort)
        assert stored_landmarks(s, job_id, "-throughput_gbps") is not None
        set_job_state(s, job, "running")  # a resume: its trials change again
        assert all(stored_landmarks(s, job_id, sort) is None for sort in INDEX_ORDERS)
        set_job_state(s, job, "interrupted")
        delete_job(s, job_id)
        assert s.scalar(select(func.count()).select_from(TrialLandmark)) == 0


def test_a_cursor_of_another_listing_is_refused() -> None:
    with pytest.raises(InvalidInputError) as caught:
        decode_cursor("not-a-cursor", "-throughput_gbps")
    assert caught.value.field == "after"
    wrong_sort = base64.urlsafe_b64encode(b'["loss_pct",1.0,3]').decode()
    bad_number = base64.urlsafe_b64encode(b'["loss_pct",1.0,"3"]').decode()
    for cursor in (wrong_sort, bad_number):
        with pytest.raises(InvalidInputError):
            decode_cursor(cursor, "-throughput_gbps" if cursor == wrong_sort else "loss_pct")
    assert decode_cursor(base64.urlsafe_b64encode(b'["loss_pct",null,3]').decode(), "loss_pct") == (None, 3)


def test_job_trials_page_by_cursor_through_the_api(api: TestClient) -> None:
    job = wait_for(api, submit(api, budget=15)["id"])
    url = f"/v1/jobs/{job['id']}/trials"
    by_offset = api.get(url, params={"sort": "-throughput_gbps", "limit": 100}).json()["items"]
    page = api.get(url, params={"sort": "-throughput_gbps", "limit": 4, "after": ""}).json()
    seen = [t["number"] for t in page["items"]]
    while page["next"] is not None:
        assert "after=" in page["next"] and "offset=" not in page["next"] and page["total"] == 15
        page = api.get(page["next"]).json()
        seen += [t["number"] for t in page["items"]]
    assert seen == [t["number"] for t in by_offset] and len(seen) == 15
    refused = api.get(url, params={"sort": "-throughput_gbps", "after": "bogus"})
    assert refused.status_code == 422 and "after" in refused.text
    assert api.get(url, params={"sort": "-score", "after": ""}).status_code == 422
    assert api.get(url, params={"sort": "number", "after": "", "offset": 4}).status_code == 422


def test_a_page_is_what_the_trial_schema_says_and_what_the_database_holds(api: TestClient, engine: Engine) -> None:
    # Pages are built as plain JSON (no model per trial): the schema must still describe them
    # exactly, field by field, and each item must carry the stored figures and knobs.
    job = submit(api, budget=10, repeats=2, seed=3)
    wait_for(api, job["id"])
    for path in (f"/v1/jobs/{job['id']}/trials?sort=-throughput_gbps&limit=4",
                 f"/v1/jobs/{job['id']}/trials?sort=-score&limit=4&offset=2",
                 f"/v1/jobs/{job['id']}/trials?sort=number&limit=3&after=",
                 "/v1/history/trials?testbed=sim:benson-40g&limit=5"):
        body = api.get(path).json()
        assert body == TrialPage.model_validate(body).model_dump(mode="json"), path
        assert body["items"] and body["simulated"] is True and body["note"]
        with session_scope(engine) as s:
            for item in body["items"]:
                trial = s.scalars(select(Trial).where(Trial.job_id == item["job_id"],
                                                      Trial.number == item["number"])).one()
                assert item["config"] == json.loads(trial.configuration.canonical)
                assert item["config_hash"] == trial.configuration.hash
                assert item["metrics"] == trial.summary["metrics"] and item["spread"] == trial.summary["spread"]
                assert item["repeats"] == trial.summary["repeats"] >= 1
                assert item["score"] == trial.summary["score"] and item["state"] == trial.state
                assert item["finished_at"] == trial.finished_at.isoformat().replace("+00:00", "Z")


def _all_pages(api: TestClient, job_id: int) -> list[dict[str, object]]:
    return [api.get(f"/v1/jobs/{job_id}/trials", params={"sort": sort, "limit": 100}).json()
            for sort in ("number", "-throughput_gbps", "-score")]


def test_stored_page_items_are_the_items_built_from_the_rows(api: TestClient, engine: Engine) -> None:
    # A finished trial's page item is kept as JSON (trial_items) by whatever records it:
    # completed, failed, and re-measured in the final race (add_measurements). A page put
    # together from them must be the page built from the trials' rows, byte for byte.
    raced = wait_for(api, submit(api, budget=10, repeats=1, seed=4)["id"])["id"]
    local = _history(engine)
    with session_scope(engine) as s:  # one trial measured again, as the final race does
        again = s.scalars(select(Trial).where(Trial.job_id == local, Trial.number == 1)).one()
        add_measurements(s, again, [sample(8.0, loss_pct=2.0)],
                         {"metrics": {"throughput_gbps": 8.5, "loss_pct": 1.5}, "repeats": 2})
    with session_scope(engine) as s:
        finished = {job: s.scalar(select(func.count(Trial.id)).where(Trial.job_id == job, Trial.state != "running"))
                    for job in (raced, local)}
        stored = {job: s.scalar(select(func.count(TrialItem.trial_id)).join(Trial, Trial.id == TrialItem.trial_id)
                                .where(Trial.job_id == job)) for job in (raced, local)}
    assert stored == finished and finished[local] == len(FIGURES) and finished[raced] >= 10
    from_items = {job: _all_pages(api, job) for job in (raced, local)}
    with session_scope(engine) as s:
        s.execute(delete(TrialItem))
    for job in (raced, local):
        assert _all_pages(api, job) == from_items[job]
    assert [t["state"] for t in from_items[local][0]["items"]].count("failed") == 2
    assert from_items[local][0]["items"][1]["metrics"]["throughput_gbps"] == 8.5
