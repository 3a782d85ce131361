"""Repository functions, run on every storage URL."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from nictune.db import (
    Job,
    Measurement,
    Testbed,
    Trial,
    Workload,
    cached_samples,
    complete_trial,
    configuration_measurements,
    context_trials,
    entities,
    get_job,
    get_or_create_configuration,
    get_or_create_testbed,
    job_trials,
    list_jobs,
    measurement_totals,
    reset_running_trials,
    session_scope,
    set_job_state,
    start_trial,
)
from nictune.errors import InvalidInputError, JobError, NotFoundError, StorageError, UnknownNameError

from .support import (
    SAMPLE_SECONDS,
    add_configuration,
    add_job,
    add_testbed,
    add_trial,
    add_workload,
    attach_measurement,
    sample,
)


def test_testbeds_workloads_and_configurations_are_keyed_by_content(engine: Engine) -> None:
    with session_scope(engine) as s:
        first = get_or_create_testbed(s, "bed", "ssh", {"kernel": "6.1", "nic": "mlx5"})
        same = get_or_create_testbed(s, "bed", "ssh", {"nic": "mlx5", "kernel": "6.1"})
        other = get_or_create_testbed(s, "bed", "ssh", {"kernel": "6.8", "nic": "mlx5"})
        assert same.id == first.id
        # The fingerprint is the identity; a second name does not rename the testbed.
        assert get_or_create_testbed(s, "other", "ssh", {"kernel": "6.1", "nic": "mlx5"}) is first
        assert first.name == "bed"
        assert other.id != first.id
        assert add_workload(s, streams=1).id == add_workload(s, streams=1).id
        assert add_workload(s, streams=1).id != add_workload(s, streams=4).id
        assert add_configuration(s, "abc123").id == add_configuration(s, "abc123").id
    with session_scope(engine) as s:
        assert s.scalar(select(func.count()).select_from(Testbed)) == 2
        assert len(first.fingerprint_hash) == 64


def test_get_or_create_survives_losing_an_insert_race(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    with session_scope(engine) as s:
        existing_id = add_testbed(s, "bed-a").id

    real_lookup = entities._lookup
    calls = {"n": 0}

    def lookup_that_misses_once(*args: object, **kwargs: object) -> object:
        calls["n"] += 1
        # The first look-up happens "before the other process committed".
        return None if calls["n"] == 1 else real_lookup(*args, **kwargs)  # type: ignore[arg-type]

    with session_scope(engine) as s:
        workload_id = add_workload(s, "written-before").id
        monkeypatch.setattr(entities, "_lookup", lookup_that_misses_once)
        assert add_testbed(s, "bed-a").id == existing_id
        monkeypatch.setattr(entities, "_lookup", real_lookup)
    assert calls["n"] == 2
    with session_scope(engine) as s:
        # The failed INSERT was rolled back to its SAVEPOINT only.
        assert s.scalar(select(func.count()).select_from(Testbed)) == 1
        assert s.get(Workload, workload_id) is not None


def test_a_hash_stored_with_another_canonical_form_is_refused(engine: Engine) -> None:
    with session_scope(engine) as s:
        get_or_create_configuration(s, "h1", '{"a": 1, "b": 2}')
        # Same JSON, other spelling: accepted.
        assert get_or_create_configuration(s, "h1", '{"b":2,"a":1}').canonical == (
            '{"a": 1, "b": 2}'
        )
        with pytest.raises(StorageError, match="different canonical form"):
            get_or_create_configuration(s, "h1", '{"a": 2}')


def test_malformed_arguments_are_rejected(engine: Engine) -> None:
    with session_scope(engine) as s:
        with pytest.raises(InvalidInputError, match="testbed kind"):
            get_or_create_testbed(s, "bed", "kvm", {})
        with pytest.raises(InvalidInputError, match="JSON"):
            get_or_create_testbed(s, "bed", "sim", {"x": math.nan})
        bed, workload = add_testbed(s), add_workload(s)
        with pytest.raises(InvalidInputError, match="one string"):
            add_job(s, bed, workload, objectives="throughput_gbps")
        with pytest.raises(InvalidInputError, match="at least one objective"):
            add_job(s, bed, workload, objectives=())


def test_job_state_changes_keep_timestamps_consistent(engine: Engine) -> None:
    with session_scope(engine) as s:
        job = add_job(s, add_testbed(s), add_workload(s))
        assert job.state == "pending"
        assert job.started_at is None
        set_job_state(s, job, "running")
    first_start = job.started_at
    assert first_start is not None
    assert first_start.tzinfo is not None
    assert first_start.utcoffset() == timedelta(0)

    with session_scope(engine) as s:
        job = get_job(s, job.id)
        set_job_state(s, job, "interrupted", error="SIGINT")
        assert job.finished_at is not None
        set_job_state(s, job, "running")
        assert job.finished_at is None
        assert job.error is None
        assert job.started_at == first_start
        set_job_state(s, job, "failed", error="testbed unreachable")

    with session_scope(engine) as s:
        stored = get_job(s, job.id)
        assert (stored.state, stored.error) == ("failed", "testbed unreachable")
        assert stored.created_at.tzinfo is not None
        assert stored.finished_at is not None
        assert stored.finished_at >= stored.started_at
        with pytest.raises(InvalidInputError, match="unknown job state 'paused'; job states: pending, running, "
                                                    "waiting, interrupted, completed, failed, cancelled"):
            set_job_state(s, stored, "paused")
        with pytest.raises(InvalidInputError, match="unknown job state 'paused'; job states: pending"):
            list_jobs(s, state="paused")
        with pytest.raises(NotFoundError, match="no job with id 4242"):
            get_job(s, 4242)
    # get_job loads what `history show` prints, so it outlives the session.
    assert (stored.testbed.name, stored.workload.name) == ("bed-a", "tcp-1")


def test_job_stats_changed_in_place_are_saved(engine: Engine) -> None:
    with session_scope(engine) as s:
        job = add_job(s, add_testbed(s), add_workload(s))
    with session_scope(engine) as s:
        stored = get_job(s, job.id)
        stored.stats["measured"] = 3
        stored.stats["noise_cv"] = 0.02
    with session_scope(engine) as s:
        assert get_job(s, job.id).stats == {"measured": 3, "noise_cv": 0.02}


def test_complete_trial_writes_one_measurement_per_repeat(engine: Engine) -> None:
    with session_scope(engine) as s:
        bed, workload = add_testbed(s), add_workload(s)
        job = add_job(s, bed, workload)
        trial = start_trial(s, job, 0, add_configuration(s, "cfg-a"))
        assert trial.state == "running"
        samples = [sample(9.5, loss_pct=0.0, cpu_rx_pct=40.0), sample(9.7, loss_pct=0.1)]
        complete_trial(
            s, trial, samples, "measured", {"throughput_gbps": 9.6, "loss_pct": math.nan},
            snapshot={"sysctl": {"net.core.busy_read": "0"}}, notes=["irq pinned"],
        )
    with session_scope(engine) as s:
        (stored,) = job_trials(s, job.id)
        assert (stored.state, stored.source, stored.number) == ("completed", "measured", 0)
        assert stored.summary == {"throughput_gbps": 9.6, "loss_pct": None}
        assert stored.snapshot == {"sysctl": {"net.core.busy_read": "0"}}
        assert stored.notes == ["irq pinned"]
        assert stored.configuration.hash == "cfg-a"
        first, second = stored.measurements
        assert [first.repeat, second.repeat] == [0, 1]
        assert (first.throughput_gbps, first.loss_pct, first.cpu_rx_pct) == (9.5, 0.0, 40.0)
        assert (second.cpu_rx_pct, second.packet_rate_mpps) == (None, None)
        assert first.metrics == {"throughput_gbps": 9.5, "loss_pct": 0.0, "cpu_rx_pct": 40.0}
        assert first.counters == {"eth0": {"rx_packets": 1000, "rx_missed_errors": 0}}
        assert (first.testbed_id, first.workload_id) == (bed.id, workload.id)
        assert first.configuration_id == stored.configuration_id
        assert first.started_at == samples[0].started_at
        assert first.finished_at.tzinfo is not None

        with pytest.raises(JobError, match="not running"):
            complete_trial(s, stored, [sample(1.0)], "measured", {})


def test_trials_that_cannot_be_completed(engine: Engine) -> None:
    with session_scope(engine) as s:
        job = add_job(s, add_testbed(s), add_workload(s))
        trial = start_trial(s, job, 0, add_configuration(s, "cfg-a"))
        with pytest.raises(InvalidInputError, match="finite"):
            complete_trial(s, trial, [sample(math.inf)], "measured", {})
        with pytest.raises(InvalidInputError, match="at least one sample"):
            complete_trial(s, trial, [], "measured", {})
        with pytest.raises(InvalidInputError, match="unknown trial source"):
            complete_trial(s, trial, [sample(1.0)], "guessed", {})
        with pytest.raises(InvalidInputError, match="no measurements of its own"):
            complete_trial(s, trial, [sample(1.0)], "cache", {})
        assert trial.state == "running"
        complete_trial(s, trial, [], "cache", {"throughput_gbps": 1.0})
        assert trial.measurements == []


def test_trial_numbers_are_unique_within_a_job(engine: Engine) -> None:
    with session_scope(engine) as s:
        bed, workload = add_testbed(s), add_workload(s)
        job, other_job = add_job(s, bed, workload), add_job(s, bed, workload)
        config = add_configuration(s, "cfg-a")
        start_trial(s, job, 0, config)
        with pytest.raises(JobError, match="already has a trial number 0"):
            start_trial(s, job, 0, config)
        start_trial(s, other_job, 0, config)  # numbering is per job
    # The database enforces it too, not only start_trial's check.
    with pytest.raises(StorageError), session_scope(engine) as s:
        s.add(Trial(job_id=job.id, number=0, configuration_id=config.id, notes=[]))
    with session_scope(engine) as s:
        assert len(job_trials(s, job.id)) == 1


def test_reset_running_trials_removes_only_this_jobs_running_trials(engine: Engine) -> None:
    with session_scope(engine) as s:
        bed, workload = add_testbed(s), add_workload(s)
        job, other_job = add_job(s, bed, workload), add_job(s, bed, workload)
        add_trial(s, job, 0, "c0")
        add_trial(s, job, 1, "c1", state="running")
        add_trial(s, job, 2, "c2", state="failed")
        add_trial(s, job, 3, "c3", state="running")
        add_trial(s, other_job, 0, "c1", state="running")
    with session_scope(engine) as s:
        assert reset_running_trials(s, job.id) == 2
    with session_scope(engine) as s:
        assert [(t.number, t.state) for t in job_trials(s, job.id)] == [
            (0, "completed"), (2, "failed"),
        ]
        assert [t.state for t in job_trials(s, other_job.id)] == ["running"]
        assert reset_running_trials(s, job.id) == 0
        # The trial can now be measured again under its old number.
        start_trial(s, get_job(s, job.id), 1, add_configuration(s, "c1"))


def test_cache_lookup_reuses_measured_samples_of_any_job(engine: Engine) -> None:
    with session_scope(engine) as s:
        bed, other_bed = add_testbed(s, "bed-a"), add_testbed(s, "bed-b", kernel="6.8")
        workload, other_workload = add_workload(s, streams=1), add_workload(s, streams=8)
        first = add_job(s, bed, workload)
        add_trial(s, first, 0, "hit", throughputs=(10.0, 11.0))
        add_trial(s, first, 1, "miss", throughputs=(1.0,))
        second = add_job(s, bed, workload)
        add_trial(s, second, 0, "hit", throughputs=(12.0,))
        # Rows the repository itself never writes under such trials, to prove the
        # lookup filters on the trial and not only on what complete_trial stores.
        attach_measurement(add_trial(s, second, 1, "hit", source="cache"), 97.0)
        attach_measurement(add_trial(s, second, 2, "hit", state="failed"), 98.0)
        attach_measurement(add_trial(s, second, 3, "hit", state="running"), 99.0)
        add_trial(s, add_job(s, bed, other_workload), 0, "hit", throughputs=(50.0,))
        add_trial(s, add_job(s, other_bed, workload), 0, "hit", throughputs=(60.0,))
    with session_scope(engine) as s:
        found = cached_samples(s, bed.id, workload.id, "hit")
        assert [m["throughput_gbps"] for m in found] == [10.0, 11.0, 12.0]
        assert cached_samples(s, other_bed.id, workload.id, "hit") == [
            {"throughput_gbps": 60.0}
        ]
        assert cached_samples(s, bed.id, workload.id, "never-measured") == []
        assert cached_samples(s, bed.id, other_workload.id, "miss") == []


def _jobs(s: Session, **filters: object) -> list[int]:
    return [job.id for job in list_jobs(s, **filters)]  # type: ignore[arg-type]


def test_list_jobs_filters_newest_first(engine: Engine) -> None:
    with session_scope(engine) as s:
        bed_a, bed_b = add_testbed(s, "bed-a"), add_testbed(s, "bed-b", kernel="6.8")
        tcp, udp = add_workload(s, "tcp"), add_workload(s, "udp", streams=2)
        old = add_job(s, bed_a, tcp)
        old.created_at = datetime(2024, 1, 1, tzinfo=UTC)
        fast = add_job(s, bed_a, udp, objectives=["throughput_gbps", "interrupts_per_gb"])
        quiet = add_job(s, bed_b, tcp, objectives=["interrupts_per_gb"])
        # An objective whose name contains another must not match it.
        add_job(s, bed_b, udp, objectives=["interrupts_per_gb_rx"])
        set_job_state(s, quiet, "completed")
    ids = [old.id, fast.id, quiet.id]
    with session_scope(engine) as s:
        everything = _jobs(s)
        assert everything == sorted(everything, reverse=True)
        assert _jobs(s, testbed="bed-a") == [fast.id, old.id]
        assert _jobs(s, workload="tcp") == [quiet.id, old.id]
        assert _jobs(s, objective="interrupts_per_gb") == [quiet.id, fast.id]
        assert _jobs(s, objective="interrupts_per_gb", limit=1, offset=1) == [fast.id]
        assert _jobs(s, state="completed") == [quiet.id]
        assert old.id not in _jobs(s, since=datetime(2024, 6, 1, tzinfo=UTC))
        assert _jobs(s, testbed="bed-a", limit=1) == [fast.id]
        assert _jobs(s, testbed="bed-a", limit=1, offset=1) == [old.id]
        assert _jobs(s, testbed="nowhere") == []
        assert set(ids) <= set(everything)
        assert list_jobs(s, testbed="bed-b")[0].testbed.name == "bed-b"
        with pytest.raises(InvalidInputError):
            list_jobs(s, state="paused")


def test_context_trials_span_jobs_on_one_testbed_and_workload(engine: Engine) -> None:
    with session_scope(engine) as s:
        bed, other_bed = add_testbed(s, "bed-a"), add_testbed(s, "bed-b", kernel="6.8")
        workload = add_workload(s, "tcp")
        first, second = add_job(s, bed, workload), add_job(s, bed, workload)
        add_trial(s, first, 0, "c0", throughputs=(5.0,))
        add_trial(s, first, 1, "c1", state="failed")
        add_trial(s, second, 0, "c2", throughputs=(8.0,))
        add_trial(s, second, 1, "c0", source="cache")
        add_trial(s, second, 2, "c3", state="running")
        add_trial(s, add_job(s, other_bed, workload), 0, "c4")
    with session_scope(engine) as s:
        trials = context_trials(s, "bed-a", "tcp")
        measured = context_trials(s, "bed-a", "tcp", measured_only=True)
        assert context_trials(s, "bed-a", "udp") == []
    # Loaded eagerly: usable after the session is gone.
    assert [(t.job_id, t.configuration.hash) for t in trials] == [
        (first.id, "c0"), (second.id, "c2"), (second.id, "c0"),
    ]
    assert [t.configuration.hash for t in measured] == ["c0", "c2"]
    assert trials[1].summary == {"throughput_gbps": 8.0}
    assert trials[1].job.space_name == "basic"


def test_configuration_measurements_by_hash_or_prefix(engine: Engine) -> None:
    with session_scope(engine) as s:
        job = add_job(s, add_testbed(s), add_workload(s))
        add_trial(s, job, 0, "a1b2c3d4e5", throughputs=(7.0, 7.5))
        add_trial(s, job, 1, "a1b2c3ffff", throughputs=(3.0,))
        add_trial(s, job, 2, "a1b2c3d4e5", source="cache")
    with session_scope(engine) as s:
        full = configuration_measurements(s, "a1b2c3d4e5")
        assert [(m.repeat, m.throughput_gbps, t.number, j.id) for m, t, j in full] == [
            (0, 7.0, 0, job.id), (1, 7.5, 0, job.id),
        ]
        assert [m.id for m, _, _ in configuration_measurements(s, "a1b2c3d")] == [
            m.id for m, _, _ in full
        ]
        with pytest.raises(InvalidInputError, match="ambiguous"):
            configuration_measurements(s, "a1b2c3")
        with pytest.raises(InvalidInputError, match="too short"):
            configuration_measurements(s, "a1b2")
        with pytest.raises(UnknownNameError, match="no stored configuration"):
            configuration_measurements(s, "ffffffff")
        # A hash is hexadecimal: wildcards (or any other character) are refused before a query.
        with pytest.raises(InvalidInputError, match="'a1b2c%' is not hexadecimal"):
            configuration_measurements(s, "a1b2c%")


def test_measurement_totals(engine: Engine) -> None:
    with session_scope(engine) as s:
        assert measurement_totals(s)["trials_measured"] == 0
        bed, workload = add_testbed(s), add_workload(s)
        job = add_job(s, bed, workload)
        set_job_state(s, job, "running")
        add_job(s, bed, workload)
        add_trial(s, job, 0, "c0", throughputs=(1.0, 2.0))
        add_trial(s, job, 1, "c1", throughputs=(3.0,))
        add_trial(s, job, 2, "c0", source="cache")
        add_trial(s, job, 3, "c2", state="failed")
        add_trial(s, job, 4, "c3", state="running")
    with session_scope(engine) as s:
        totals = measurement_totals(s)
    assert totals["jobs_by_state"] == {
        "pending": 1, "running": 1, "waiting": 0, "interrupted": 0, "completed": 0, "failed": 0,
        "cancelled": 0,
    }
    assert (totals["trials_measured"], totals["cache_hits"], totals["trials_failed"]) == (2, 1, 1)
    assert totals["measurements"] == 3
    # The testbed is a simulated one: its runs' seconds are the model's, counted apart.
    assert totals["simulated_seconds"] == pytest.approx(3 * SAMPLE_SECONDS, abs=1e-3)
    assert totals["measurement_seconds"] == 0


def test_an_exception_rolls_back_the_block_and_keeps_committed_trials(engine: Engine) -> None:
    with session_scope(engine) as s:
        job = add_job(s, add_testbed(s), add_workload(s))
        add_trial(s, job, 0, "c0", throughputs=(4.0, 4.1))

    with pytest.raises(RuntimeError, match="worker died"), session_scope(engine) as s:
        add_trial(s, get_job(s, job.id), 1, "c1")
        set_job_state(s, get_job(s, job.id), "completed")
        raise RuntimeError("worker died")

    with pytest.raises(StorageError), session_scope(engine) as s:
        add_trial(s, get_job(s, job.id), 2, "c2")
        s.add(Measurement(trial_id=-1))  # violates NOT NULL / FK at flush

    with session_scope(engine) as s:
        (kept,) = job_trials(s, job.id)
        assert (kept.number, kept.state) == (0, "completed")
        assert [m.throughput_gbps for m in kept.measurements] == [4.0, 4.1]
        assert get_job(s, job.id).state == "pending"
        assert s.scalar(select(func.count()).select_from(Measurement)) == 2
        assert s.scalar(select(func.count()).select_from(Job)) == 1


def test_a_new_sqlite_database_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    """The history and the service's token hashes were world-readable (0644)."""
    from nictune.db import get_or_create_testbed, open_database, session_scope

    path = tmp_path / "sub" / "nictune.db"
    dbe = open_database(f"sqlite:///{path}")
    try:
        with session_scope(dbe) as s:
            get_or_create_testbed(s, "sim:benson-40g", "sim", {"kind": "sim"})
    finally:
        dbe.dispose()
    assert path.stat().st_mode & 0o777 == 0o600
    existing = tmp_path / "old.db"
    existing.touch()
    existing.chmod(0o640)
    open_database(f"sqlite:///{existing}").dispose()
    assert existing.stat().st_mode & 0o777 == 0o640  # an existing file is left as it is
