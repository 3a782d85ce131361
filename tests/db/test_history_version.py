"""The history's version (``history_version``): counted up by exactly the transactions that
change what the history's answers are computed from, on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import Engine

from nictune.db import Job, Trial, add_measurements, complete_trial, delete_job, fail_trial, session_scope, start_trial
from nictune.db.stats import version

from .support import add_configuration, add_job, add_testbed, add_workload, sample


def _version(engine: Engine) -> int:
    with engine.connect() as c:
        return version(c)


def test_the_version_moves_with_measurements_and_deletions_only(engine: Engine) -> None:
    assert _version(engine) == 0, "a new database starts at 0 (migration 0009's row)"
    with session_scope(engine) as s:
        bed, load = add_testbed(s), add_workload(s)
        job = add_job(s, bed, load)
        measured = start_trial(s, job, 0, add_configuration(s, "a"))
        s.flush()
        job_id, trial_id = job.id, measured.id
    assert _version(engine) == 0, "a trial that starts measures nothing yet"
    with session_scope(engine) as s:
        trial = s.get_one(Trial, trial_id)
        complete_trial(s, trial, [sample(10.0), sample(10.2)], "measured", {"throughput_gbps": 10.1})
    assert _version(engine) == 1
    with session_scope(engine) as s:
        job = s.get_one(Job, job_id)
        cached = start_trial(s, job, 1, add_configuration(s, "a"))
        complete_trial(s, cached, [], "cache", {"throughput_gbps": 10.1})
        failed = start_trial(s, job, 2, add_configuration(s, "b"))
        fail_trial(s, failed, "the testbed went away")
    assert _version(engine) == 1, "a cache answer or a failure adds no measurement"
    with session_scope(engine) as s:
        add_measurements(s, s.get_one(Trial, trial_id), [sample(10.4)], {"throughput_gbps": 10.2})
    assert _version(engine) == 2
    with session_scope(engine) as s:
        delete_job(s, job_id)
    assert _version(engine) == 3


def test_a_transaction_that_fails_leaves_the_version_where_it_was(engine: Engine) -> None:
    with session_scope(engine) as s:
        job = add_job(s, add_testbed(s), add_workload(s))
        s.flush()
        trial_id = start_trial(s, job, 0, add_configuration(s, "a")).id
    try:
        with session_scope(engine) as s:
            complete_trial(s, s.get_one(Trial, trial_id), [sample(10.0)], "measured", {"throughput_gbps": 10.0})
            raise RuntimeError("the worker died before the commit")
    except RuntimeError:
        pass
    assert _version(engine) == 0
