"""DriverStatement: a Core statement run on the driver's cursor gives the rows
``Connection.execute`` gives (types converted both ways), runs in the connection's transaction
as ``execute`` would (a snapshot's, or none without one), and its errors are SQLAlchemy's, on
SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, Float, bindparam, select, text
from sqlalchemy.exc import DBAPIError

from nictune.api.database import read_engine
from nictune.db import Job, Testbed, Trial, complete_trial, connection_scope, session_scope, start_trial
from nictune.db.driver import DriverStatement
from nictune.errors import StorageError
from tests.db.support import add_configuration, add_job, add_testbed, add_workload, sample

#: A job's testbed kind, state and end (a UTC timestamp type), and its trials with a figure
#: at most ``value`` (a float parameter), best first.
HEADER = DriverStatement(select(Testbed.kind, Job.state, Job.finished_at)
                         .join(Job, Job.testbed_id == Testbed.id).where(Job.id == bindparam("job_id")))
TRIALS = DriverStatement(select(Trial.number, Trial.throughput_gbps)
                         .where(Trial.job_id == bindparam("job_id"),
                                Trial.throughput_gbps <= bindparam("value", type_=Float()))
                         .order_by(Trial.throughput_gbps.desc(), Trial.number)
                         .limit(bindparam("limit")).offset(bindparam("offset")))
ENDED = datetime(2026, 12, 2, 8, 30, 15, 250000, tzinfo=UTC)


def _job(engine: Engine) -> int:
    with session_scope(engine) as s:
        job = add_job(s, add_testbed(s), add_workload(s))
        for number, value in enumerate([5.0, 9.5, 1.25, 9.5]):
            trial = start_trial(s, job, number, add_configuration(s, f"c{number}"))
            complete_trial(s, trial, [sample(value)], "measured", {"metrics": {"throughput_gbps": value}})
        job.state, job.finished_at = "completed", ENDED
        return job.id


def test_rows_are_those_of_execute_with_types_converted(engine: Engine) -> None:
    job_id = _job(engine)
    params = {"job_id": job_id, "value": 9.5, "limit": 3, "offset": 0}
    with connection_scope(engine, snapshot=False) as c:
        assert HEADER.rows(c, {"job_id": job_id}) == [tuple(c.execute(HEADER.statement, {"job_id": job_id}).one())]
        kind, state, finished_at = HEADER.rows(c, {"job_id": job_id})[0]
        assert (kind, state, finished_at) == ("sim", "completed", ENDED) and finished_at.tzinfo is not None
        assert TRIALS.rows(c, params) == [(1, 9.5), (3, 9.5), (0, 5.0)]
        assert TRIALS.rows(c, {**params, "value": 9, "offset": 1}) == [(2, 1.25)]  # an int for a float
        assert HEADER.rows(c, {"job_id": job_id + 100}) == []
    with session_scope(engine) as s:  # on a session: in its transaction
        assert TRIALS.rows(s, params) == [tuple(r) for r in s.execute(TRIALS.statement, params)]


def test_it_runs_in_the_connections_transaction(db_url: str, engine: Engine) -> None:
    job_id = _job(engine)
    reader = read_engine(db_url)
    try:
        with connection_scope(reader, snapshot=False) as c:
            HEADER.rows(c, {"job_id": job_id})
            if c.dialect.name == "postgresql":
                assert c.connection.driver_connection.info.transaction_status.name == "IDLE"  # type: ignore[union-attr]
            else:
                assert not c.connection.driver_connection.in_transaction  # type: ignore[union-attr]
        with connection_scope(reader) as c:
            assert HEADER.rows(c, {"job_id": job_id})[0][1] == "completed"
            assert c.in_transaction()
            with session_scope(engine) as s:  # another writer, while the snapshot is open
                job = s.get(Job, job_id)
                assert job is not None
                job.state = "failed"
            # SQLite's reader keeps its snapshot; PostgreSQL's (read committed) sees the commit.
            seen = HEADER.rows(c, {"job_id": job_id})[0][1]
            assert seen == ("failed" if c.dialect.name == "postgresql" else "completed")
    finally:
        reader.dispose()


def test_driver_errors_are_sqlalchemys_and_a_scope_reports_them(engine: Engine) -> None:
    missing = DriverStatement(select(text("x")).select_from(text("no_such_table")))
    with connection_scope(engine, snapshot=False) as c, pytest.raises(DBAPIError, match="no_such_table"):
        missing.rows(c, {})
    with pytest.raises(StorageError, match="no_such_table"), connection_scope(engine) as c:
        missing.rows(c, {})
    with connection_scope(engine) as c:  # the pool's connection still serves
        assert c.execute(text("SELECT 1")).scalar_one() == 1


def test_an_expanding_parameter_is_refused(engine: Engine) -> None:
    listed = DriverStatement(select(Job.id).where(Job.id.in_(bindparam("ids", expanding=True))))
    with connection_scope(engine) as c, pytest.raises(TypeError, match="expanding"):
        listed.rows(c, {"ids": [1, 2]})
