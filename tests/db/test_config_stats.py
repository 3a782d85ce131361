"""The per-configuration sums (``config_stats``) give the history's means exactly as the scan of
every measurement they replace did, on SQLite and PostgreSQL, through cache hits, short runs,
failed trials, repeats added later, two fingerprints of one testbed, two workloads of one
name and a deleted job; the trials' metric columns follow their summaries."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest
from sqlalchemy import Engine, case, distinct, func, inspect, null, select
from sqlalchemy.orm import Session

from nictune.db import (
    MAIN_METRICS,
    Configuration,
    Job,
    Measurement,
    Testbed,
    Trial,
    Workload,
    add_measurements,
    complete_trial,
    config_stats,
    current_revision,
    delete_job,
    fail_trial,
    head_revision,
    open_database,
    session_scope,
    start_trial,
)
from nictune.db import stats as db_stats
from nictune.db.best import ConfigAggregate, configuration_means
from nictune.errors import NotFoundError

from .support import add_configuration, add_job, add_testbed, add_workload, attach_measurement, sample


def _square(column: Any) -> Any:
    magnitude = func.abs(column)
    return case((magnitude < 1e-100, 0.0), (magnitude > 1e100, null()), else_=column * column)


def scanned_means(s: Session, testbed: str, workload: str, extra_metrics: Sequence[str] = ()) -> list[ConfigAggregate]:
    """The scan ``configuration_means`` ran before the sums existed (kept here as the reference)."""
    names = [*MAIN_METRICS, *(m for m in extra_metrics if m not in MAIN_METRICS)]
    averages = [func.avg(getattr(Measurement, m)) if m in MAIN_METRICS
                else func.avg(Measurement.metrics[m].as_float()) for m in names]
    squares = [func.avg(_square(getattr(Measurement, m))) for m in MAIN_METRICS]
    stmt = (
        select(Measurement.testbed_id, Measurement.configuration_id, func.count(Measurement.id),
               func.count(distinct(Measurement.trial_id)), func.max(Measurement.finished_at), *averages,
               *squares)
        .join(Trial, Measurement.trial_id == Trial.id)
        .where(Measurement.testbed_id.in_(select(Testbed.id).where(Testbed.name == testbed)),
               Measurement.workload_id.in_(select(Workload.id).where(Workload.name == workload)),
               Trial.state == "completed", Trial.source == "measured", Measurement.short.is_(False))
        .group_by(Measurement.testbed_id, Measurement.configuration_id)
    )
    out = []
    for testbed_id, config_id, n, trials, last, *rest in s.execute(stmt):
        means, sq = rest[:len(names)], rest[len(names):]
        metrics = {name: float(v) for name, v in zip(names, means, strict=True) if v is not None}
        mean_squares = {name: float(v) for name, v in zip(MAIN_METRICS, sq, strict=True) if v is not None}
        out.append(ConfigAggregate(testbed_id, config_id, int(n), int(trials), last, metrics, mean_squares,
                                   workload))
    return out


def _measured(s: Session, job: Job, number: int, config: str, rows: Sequence[dict[str, float]],
              *, short: bool = False) -> Trial:
    trial = start_trial(s, job, number, add_configuration(s, config))
    samples = [sample(row["throughput_gbps"], **{k: v for k, v in row.items() if k != "throughput_gbps"})
               for row in rows]
    mean = {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}
    complete_trial(s, trial, samples, "measured", {"metrics": mean}, short=short,
                   duration_s=2.0 if short else 10.0)
    return trial


def _build(s: Session) -> dict[str, int]:
    """A history with every kind of trial; returns job ids by role."""
    old_kernel, new_kernel = add_testbed(s, kernel="6.1.0"), add_testbed(s, kernel="6.2.0")  # two fingerprints
    tcp, tcp_again = add_workload(s, streams=1), add_workload(s, streams=4)  # one name, two definitions
    other = add_workload(s, "udp-1", streams=2)
    first, second = add_job(s, old_kernel, tcp), add_job(s, old_kernel, tcp)
    third, fourth, udp = add_job(s, new_kernel, tcp), add_job(s, old_kernel, tcp_again), add_job(s, old_kernel, other)
    row = {"throughput_gbps": 9.4, "loss_pct": 0.01, "cpu_rx_pct": 41.0, "retransmits": 3.0}
    _measured(s, first, 0, "a", [row, {**row, "throughput_gbps": 9.6, "retransmits": 5.0}])
    _measured(s, first, 1, "b", [{"throughput_gbps": 7.0, "loss_pct": 1e-120, "interrupts_per_gb": 1e150}])
    _measured(s, first, 2, "c", [{"throughput_gbps": 3.0}], short=True)  # a screening run only
    failed = start_trial(s, first, 3, add_configuration(s, "a"))
    fail_trial(s, failed, "iperf3 exited with status 1")
    attach_measurement(failed, 99.0)  # rows under a failed trial never count
    # A cache hit: no rows of its own; then measured again (it becomes measured).
    hit = start_trial(s, second, 0, add_configuration(s, "a"))
    complete_trial(s, hit, [], "cache", {"metrics": {"throughput_gbps": 9.5}})
    add_measurements(s, hit, [sample(9.1, loss_pct=0.02, packet_rate_mpps=0.8)], {"metrics": {"throughput_gbps": 9.1}})
    # A measured trial gets more repeats, one short one (left out) and one full one.
    again = _measured(s, second, 1, "b", [{"throughput_gbps": 6.5, "loss_pct": 0.0}])
    add_measurements(s, again, [sample(1.0)], {"metrics": {"throughput_gbps": 6.5}}, short=True, duration_s=2.0)
    add_measurements(s, again, [sample(6.9, loss_pct=0.3)], {"metrics": {"throughput_gbps": 6.7}})
    # A short-only trial that later earns a full run becomes a counted trial.
    screened = _measured(s, second, 2, "c", [{"throughput_gbps": 2.0}], short=True)
    add_measurements(s, screened, [sample(8.0, cpu_rx_pct=12.0)], {"metrics": {"throughput_gbps": 8.0}})
    _measured(s, third, 0, "a", [{"throughput_gbps": 20.0, "loss_pct": 0.5}])  # the other fingerprint
    _measured(s, fourth, 0, "a", [{"throughput_gbps": 11.0, "retransmits": 1.0}])  # the other tcp-1 workload
    _measured(s, fourth, 1, "d", [{"throughput_gbps": 5.0, "loss_pct": 0.0}, {"throughput_gbps": 5.5, "loss_pct": 0.1}])
    _measured(s, udp, 0, "a", [{"throughput_gbps": 4.0}])
    return {"first": first.id, "second": second.id, "third": third.id, "fourth": fourth.id, "udp": udp.id}


def _assert_same(new: list[ConfigAggregate], old: list[ConfigAggregate]) -> None:
    def key(c: ConfigAggregate) -> tuple[int, int]:
        return c.testbed_id, c.configuration_id

    assert sorted(map(key, new)) == sorted(map(key, old))
    by_key = {key(c): c for c in old}
    for c in new:
        o = by_key[key(c)]
        assert (c.measurements, c.trials, c.last_measured_at, c.workload) == (
            o.measurements, o.trials, o.last_measured_at, o.workload)
        assert c.metrics.keys() == o.metrics.keys() and c.squares.keys() == o.squares.keys()
        for name, value in c.metrics.items():  # sums in another order: equal to the last bits
            assert value == pytest.approx(o.metrics[name], rel=1e-12, abs=1e-300)
        for name, value in c.squares.items():
            assert value == pytest.approx(o.squares[name], rel=1e-12, abs=1e-300)


def _compare_everything(s: Session) -> int:
    compared = 0
    for workload in ("tcp-1", "udp-1"):
        for extra in ((), ("retransmits", "loss_pct")):
            new, old = configuration_means(s, "bed-a", workload, extra), scanned_means(s, "bed-a", workload, extra)
            _assert_same(new, old)
            compared += len(new)
    return compared


def _by_hash(s: Session, workload: str = "tcp-1", extra: Sequence[str] = ()) -> dict[str, ConfigAggregate]:
    """The aggregates on the first fingerprint (kernel 6.1.0), by configuration hash."""
    first_bed = s.scalar(select(func.min(Testbed.id)))
    hashes = {i: h for i, h in s.execute(select(Configuration.id, Configuration.hash))}
    return {hashes[c.configuration_id]: c for c in configuration_means(s, "bed-a", workload, extra)
            if c.testbed_id == first_bed}


def _rows(s: Session) -> dict[tuple[int, int, int], tuple[Any, ...]]:
    return {(r.testbed_id, r.workload_id, r.configuration_id): tuple(r) for r in s.execute(select(config_stats))}


def _assert_rows_match(kept: dict[tuple[int, int, int], tuple[Any, ...]],
                       rebuilt: dict[tuple[int, int, int], tuple[Any, ...]]) -> None:
    assert kept.keys() == rebuilt.keys()
    for k, row in kept.items():
        for a, b in zip(row, rebuilt[k], strict=True):
            assert a == (pytest.approx(b, rel=1e-12, abs=1e-300) if isinstance(b, float) else b)


def test_the_sums_give_the_means_of_the_scan_they_replace(engine: Engine) -> None:
    with session_scope(engine) as s:
        jobs = _build(s)
    with session_scope(engine) as s:
        # tcp-1: a, b, c, d on kernel 6.1 and a on 6.2; udp-1: a. Each without and with extras.
        assert _compare_everything(s) == 2 * (5 + 1)
        means = _by_hash(s, extra=["retransmits"])
        a = means["a"]
        # job 1's two repeats, the cache hit's later repeat, the other tcp-1 workload's run.
        assert (a.measurements, a.trials) == (4, 3)
        assert a.metrics["throughput_gbps"] == pytest.approx((9.4 + 9.6 + 9.1 + 11.0) / 4)
        assert a.metrics["retransmits"] == pytest.approx((3.0 + 5.0 + 1.0) / 3)  # the rows that have it
        c = means["c"]
        assert (c.measurements, c.trials, c.metrics["throughput_gbps"]) == (1, 1, 8.0)  # screening runs left out
        kept = _rows(s)
        db_stats.recompute(s)  # the table rebuilt from the rows equals the one kept on the way
        _assert_rows_match(kept, _rows(s))
    with session_scope(engine) as s:
        delete_job(s, jobs["first"])
        assert s.scalar(select(func.count()).select_from(Trial).where(Trial.job_id == jobs["first"])) == 0
    with session_scope(engine) as s:
        _compare_everything(s)
        means = _by_hash(s)
        a, b = means["a"], means["b"]
        assert a.metrics["throughput_gbps"] == pytest.approx((9.1 + 11.0) / 2) and (a.measurements, a.trials) == (2, 2)
        # b's only rows now are job 2's two full runs (job 1's 1e150 interrupts went with it).
        assert b.measurements == 2 and "interrupts_per_gb" not in b.metrics
        assert b.squares["loss_pct"] == pytest.approx(0.3 ** 2 / 2)
        for role in ("second", "third", "fourth", "udp"):
            delete_job(s, jobs[role])
        assert configuration_means(s, "bed-a", "tcp-1") == [] and _rows(s) == {}
        with pytest.raises(NotFoundError):
            delete_job(s, jobs["first"])


def test_trials_carry_their_summary_main_metrics_as_columns(engine: Engine) -> None:
    with session_scope(engine) as s:
        bed, load = add_testbed(s), add_workload(s)
        job = add_job(s, bed, load)
        trial = _measured(s, job, 0, "a", [{"throughput_gbps": 9.0, "loss_pct": 0.5}])
        assert (trial.throughput_gbps, trial.loss_pct, trial.cpu_rx_pct) == (9.0, 0.5, None)
        add_measurements(s, trial, [sample(7.0)], {"metrics": {"throughput_gbps": 8.0, "loss_pct": math.nan}})
        hit = start_trial(s, job, 1, add_configuration(s, "b"))
        complete_trial(s, hit, [], "cache", {"metrics": {"throughput_gbps": 3, "cpu_rx_pct": "high"}})
        flat = start_trial(s, job, 2, add_configuration(s, "c"))
        complete_trial(s, flat, [sample(1.0)], "measured", {"throughput_gbps": 1.0})  # no "metrics"
    with session_scope(engine) as s:
        rows = s.execute(select(Trial.number, Trial.throughput_gbps, Trial.loss_pct, Trial.cpu_rx_pct)
                         .order_by(Trial.number)).all()
    assert [tuple(r) for r in rows] == [(0, 8.0, None, None), (1, 3.0, None, None), (2, None, None, None)]


def _downgrade(engine: Engine, revision: str) -> None:
    from alembic import command

    from nictune.db import alembic_config

    with engine.begin() as connection:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def _trial_columns(s: Session) -> list[tuple[Any, ...]]:
    columns = [getattr(Trial, m) for m in MAIN_METRICS]
    return [tuple(r) for r in s.execute(select(Trial.id, *columns).order_by(Trial.id))]


def test_migration_0006_backfills_the_sums_and_the_trial_columns(db_url: str) -> None:
    engine = open_database(db_url)
    try:
        with session_scope(engine) as s:
            _build(s)
        with session_scope(engine) as s:
            kept, columns = _rows(s), _trial_columns(s)
        assert len(kept) == 7 and any(c[1] is not None for c in columns) and any(c[1] is None for c in columns)
        _downgrade(engine, "0005")
        assert current_revision(engine) == "0005"
        assert "config_stats" not in inspect(engine).get_table_names()
        assert not {m for m in MAIN_METRICS} & {c["name"] for c in inspect(engine).get_columns("trials")}
    finally:
        engine.dispose()
    engine = open_database(db_url)  # upgrades to the head again: the backfill
    try:
        assert current_revision(engine) == head_revision()
        with session_scope(engine) as s:
            _assert_rows_match(_rows(s), kept)
            assert _trial_columns(s) == columns
            _compare_everything(s)
    finally:
        engine.dispose()
