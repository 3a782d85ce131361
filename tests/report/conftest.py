"""Finished simulated jobs in a temporary SQLite database, shared by the report and export tests.

Each job runs once per test session on the simulated ``sim:benson-40g`` testbed (about a
second each): a GA job, a one-factor (``ofat``) job and a two-objective job.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine

from nictune.db import open_database
from nictune.jobs import JobRunner, JobSpec, create_job
from nictune.report import Report, build_report


@dataclass
class Jobs:
    """The database and the ids of its finished jobs."""

    url: str
    engine: Engine
    ga: int
    ofat: int
    multi: int


@pytest.fixture(scope="session")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Jobs]:
    path: Path = tmp_path_factory.mktemp("report-db") / "nictune.db"
    url = f"sqlite:///{path}"
    dbe = open_database(url)
    specs = {
        "ga": JobSpec(objectives=["throughput"], testbed="sim:benson-40g", engine="ga", budget=60, seed=7,
                      racing=False),
        "ofat": JobSpec(objectives=["throughput"], testbed="sim:benson-40g", workload="udp", engine="ofat",
                        budget=50, seed=7),
        "multi": JobSpec(objectives=["throughput", "cpu"], testbed="sim:benson-40g", engine="random",
                         budget=30, seed=7),
    }
    ids = {}
    for name, spec in specs.items():
        ids[name] = create_job(dbe, spec)
        outcome = JobRunner(dbe).run(ids[name])
        assert outcome.state == "completed", (name, outcome)
    try:
        yield Jobs(url=url, engine=dbe, **ids)
    finally:
        dbe.dispose()


@pytest.fixture(scope="session")
def ga_report(jobs: Jobs, tmp_path_factory: pytest.TempPathFactory) -> Report:
    return build_report(jobs.engine, jobs.ga, tmp_path_factory.mktemp("ga-report"))


@pytest.fixture(scope="session")
def ofat_report(jobs: Jobs, tmp_path_factory: pytest.TempPathFactory) -> Report:
    return build_report(jobs.engine, jobs.ofat, tmp_path_factory.mktemp("ofat-report"))


@pytest.fixture(scope="session")
def multi_report(jobs: Jobs, tmp_path_factory: pytest.TempPathFactory) -> Report:
    return build_report(jobs.engine, jobs.multi, tmp_path_factory.mktemp("multi-report"))
