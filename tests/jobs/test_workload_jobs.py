"""A job carries its whole workload (issue 30): stored with the job, rebuilt from the stored
definition when it runs or resumes, and refused before anything is stored when invalid."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from nictune import db
from nictune.errors import InvalidInputError
from nictune.jobs import JobRunner, JobSpec, create_job
from nictune.measure.benchmarks.workloads import resolve_workload

OPTIONS = {"streams": 4, "length": 1400, "bitrate": "5G"}


def test_the_job_stores_and_runs_the_workload_its_options_made(engine: Engine) -> None:
    spec = JobSpec(objectives=["throughput"], testbed="sim:benson-40g", workload="udp", workload_options=OPTIONS,
                   duration_s=2, budget=2, repeats=1, seed=3, racing=False, warm_start=False)
    job_id = create_job(engine, spec)
    wanted = resolve_workload("udp", {**OPTIONS, "duration": 2})
    with db.session_scope(engine) as s:
        stored = db.get_job(s, job_id).workload
        assert (stored.name, dict(stored.definition)) == ("udp(-P 4 -l 1400 -b 5G)", wanted.key())
    runner = JobRunner(engine)
    prepared = runner.prepare(job_id)  # what a run, and a resume, measures
    try:
        assert prepared.workload == wanted
    finally:
        prepared.executor.close()
    assert runner.run(job_id).measured == 2


def test_an_inline_definition_is_a_workload_too(engine: Engine) -> None:
    definition = {"name": "mine", "protocol": "tcp", "streams": 2, "bitrate": "2G"}
    job_id = create_job(engine, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", workload=definition,
                                        budget=1, repeats=1, seed=1))
    with db.session_scope(engine) as s:
        assert db.get_job(s, job_id).workload.definition["bitrate_gbps"] == 2.0


@pytest.mark.parametrize(("workload", "options", "field"), [
    ("udp", {"streams": 0}, "streams"),
    ("tcp", {"bidir": True}, "bidir"),  # not on a simulated testbed
    ("tcp", {"rate": 10}, "rate"),
    ({"name": "x", "protocol": "tcp", "colour": 1}, {}, "colour"),
])
def test_an_invalid_workload_is_refused_before_anything_is_stored(
        engine: Engine, workload: object, options: dict[str, object], field: str) -> None:
    spec = JobSpec(objectives=["throughput"], testbed="sim:benson-40g", workload=workload,  # type: ignore[arg-type]
                   workload_options=options, budget=1)
    with pytest.raises(InvalidInputError) as info:
        create_job(engine, spec)
    assert info.value.field == field
    with db.session_scope(engine) as s:
        assert db.list_jobs(s) == []
