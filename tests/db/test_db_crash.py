"""Kill -9 safety: a writer killed at any moment loses no committed trial.

A real child process writes trials in a loop (start commit, then complete commit, as
the job loop does) and prints each trial number once its completion is committed. It is
killed with SIGKILL mid-stream, then restarted to resume the same job and killed again.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlalchemy.engine import make_url

import nictune
from nictune.db import job_trials, open_database, reset_running_trials, session_scope

pytestmark = pytest.mark.system  # runs nictune in subprocesses


COMMITS_BEFORE_KILL = 15
DEADLINE_S = 60.0

CHILD = r"""
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime

from nictune.db import (
    Trial, complete_trial, create_job, get_job, get_or_create_configuration,
    get_or_create_testbed, get_or_create_workload, job_trials, open_database,
    reset_running_trials, session_scope, start_trial,
)


@dataclass
class Repeat:
    metrics: dict
    counters: dict = field(default_factory=dict)
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    finished_at: datetime = field(default_factory=lambda: datetime.now(UTC))


engine = open_database(sys.argv[1])
with session_scope(engine) as s:
    if sys.argv[2] == "new":
        job = create_job(
            s, space_name="crash", space_definition={}, objectives=["throughput_gbps"],
            testbed=get_or_create_testbed(s, "crash-bed", "sim", {"profile": "10g"}),
            workload=get_or_create_workload(s, "crash-load", {"streams": 1}),
            constraints=[], engine="random", engine_params={}, budget=10**6, repeats=2,
            seed=1,
        )
    else:
        job = get_job(s, int(sys.argv[2]))
        reset_running_trials(s, job.id)
    job_id = job.id
    number = len(job_trials(s, job_id))
print("job", job_id, flush=True)
while True:
    with session_scope(engine) as s:
        configuration = get_or_create_configuration(s, f"cfg-{number:08d}", f'"{number}"')
        trial_id = start_trial(s, get_job(s, job_id), number, configuration).id
    with session_scope(engine) as s:
        trial = s.get(Trial, trial_id)
        repeats = [Repeat({"throughput_gbps": number + 0.5}) for _ in range(2)]
        complete_trial(s, trial, repeats, "measured", {"throughput_gbps": number + 0.5})
    print(number, flush=True)
    number += 1
"""


def _run_and_kill(url: str, job: str) -> tuple[int, set[int]]:
    """Run the writer until it reports enough commits, SIGKILL it, return what it saw."""
    env = dict(os.environ)
    package_root = str(Path(nictune.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, job],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    assert child.stdout is not None
    committed: set[int] = set()
    job_id = -1
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(committed) < COMMITS_BEFORE_KILL and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            if line.startswith("job "):
                job_id = int(line.split()[1])
            else:
                committed.add(int(line))
    finally:
        os.kill(child.pid, signal.SIGKILL)
        # Whatever the child printed before it died was committed before it printed.
        rest, errors = child.communicate(timeout=30)
    committed.update(int(line) for line in rest.split())
    assert child.returncode == -signal.SIGKILL, errors
    assert len(committed) >= COMMITS_BEFORE_KILL, f"child wrote too little: {errors}"
    return job_id, committed


def _check(url: str, job_id: int, committed: set[int]) -> None:
    database = make_url(url).database
    if make_url(url).get_backend_name() == "sqlite" and database:
        with sqlite3.connect(database) as raw:
            assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    engine: Engine = open_database(url)
    try:
        with session_scope(engine) as s:
            # At most the one trial that was being measured is left half-done.
            assert reset_running_trials(s, job_id) <= 1
        with session_scope(engine) as s:
            trials = job_trials(s, job_id)
        numbers = [trial.number for trial in trials]
        assert committed <= set(numbers)
        assert numbers == list(range(len(numbers)))
        for trial in trials:
            assert trial.state == "completed"
            assert [m.throughput_gbps for m in trial.measurements] == [trial.number + 0.5] * 2
    finally:
        engine.dispose()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_never_loses_a_committed_trial(db_url: str) -> None:
    open_database(db_url).dispose()  # migrate first: the kill targets trial writes
    job_id, first = _run_and_kill(db_url, "new")
    _check(db_url, job_id, first)

    resumed_job, second = _run_and_kill(db_url, str(job_id))
    assert resumed_job == job_id
    _check(db_url, job_id, first | second)
    assert max(second) > max(first)
