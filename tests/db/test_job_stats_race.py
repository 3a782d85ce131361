"""Two writers of one job's stats (the job runner counting a trial, the service recording a
cancel) never lose each other's keys: each reads the job with its row locked (PostgreSQL;
SQLite's writers are serialised at BEGIN), so the second reads what the first wrote."""

from __future__ import annotations

import threading

from sqlalchemy.engine import Engine

from nictune import db


def _job(engine: Engine) -> int:
    with db.session_scope(engine) as s:
        testbed = db.get_or_create_testbed(s, "sim:benson-40g", "sim", {"model": "benson"})
        workload = db.get_or_create_workload(s, "tcp", {"name": "tcp"})
        job = db.create_job(s, space_name="benson-40g", space_definition={}, testbed=testbed, workload=workload,
                            objectives=["throughput"], constraints=[], engine="random", engine_params={},
                            budget=5, repeats=1, seed=0)
        job.stats = {"measured": 0}
        s.flush()
        return job.id


def test_a_cancel_written_while_the_runner_counts_a_trial_is_kept(engine: Engine) -> None:
    job_id = _job(engine)
    runner_read = threading.Event()
    cancel_done = threading.Event()

    def cancel() -> None:
        assert runner_read.wait(30)
        with db.session_scope(engine) as s:
            job = db.get_job(s, job_id, for_update=True)  # waits for the runner's transaction
            job.stats["cancel_requested"] = True
        cancel_done.set()

    canceller = threading.Thread(target=cancel)
    canceller.start()
    with db.session_scope(engine) as s:  # the runner: read, count, commit
        job = db.get_job(s, job_id, for_update=True)
        job.stats["measured"] = job.stats.get("measured", 0) + 1
        runner_read.set()
        # Without the lock the cancel commits here, between the runner's read and its write.
        assert not cancel_done.wait(0.5), "the cancel did not wait for the runner's transaction"
    canceller.join(30)
    assert cancel_done.is_set()
    with db.session_scope(engine) as s:
        stats = dict(db.get_job(s, job_id).stats)
    assert stats == {"measured": 1, "cancel_requested": True}
