"""The read model: per-configuration sums, and the trials' main metrics as columns.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28

Hand-written. A migration is a frozen snapshot: it never imports nictune.db models.

* ``config_stats``: per (testbed fingerprint, workload, configuration), the number of
  full-length measurements of completed measured trials, of such trials, the last one's
  end, and per main metric the count, sum, sum of squares and count of squares (a square
  below 1e-100 counts as 0, one above 1e100 is left out). Backfilled with one scan of the
  measurements; from then on kept by the transaction that records measurements.
* ``trials.<metric>`` for the five main metrics: the trial's mean (``summary.metrics``),
  NULL when absent or not a number, with an index on (job_id, metric, number) for sorted pages;
  and an index on (configuration_id, state, source, job_id): the jobs that measured a
  configuration, read without the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

METRICS = ("throughput_gbps", "loss_pct", "interrupts_per_gb", "cpu_rx_pct", "packet_rate_mpps")
TINY = 1e-100


def _stat_columns() -> list[sa.Column[Any]]:
    columns: list[sa.Column[Any]] = []
    for metric in METRICS:
        columns += [sa.Column(f"{metric}_n", sa.Integer(), nullable=False),
                    sa.Column(f"{metric}_sum", sa.Float(), nullable=False),
                    sa.Column(f"{metric}_sumsq", sa.Float(), nullable=False),
                    sa.Column(f"{metric}_nsq", sa.Integer(), nullable=False)]
    return columns


def _backfill_stats() -> None:
    m = sa.table("measurements", sa.column("id"), sa.column("trial_id"), sa.column("testbed_id"),
                 sa.column("workload_id"), sa.column("configuration_id"), sa.column("finished_at"),
                 sa.column("short", sa.Boolean()), *(sa.column(metric, sa.Float()) for metric in METRICS))
    t = sa.table("trials", sa.column("id"), sa.column("state"), sa.column("source"))
    names = ["testbed_id", "workload_id", "configuration_id", "measurements", "trials", "last_measured_at"]
    columns: list[sa.ColumnElement[Any]] = [
        m.c.testbed_id, m.c.workload_id, m.c.configuration_id, sa.func.count(m.c.id),
        sa.func.count(sa.distinct(m.c.trial_id)), sa.func.max(m.c.finished_at)]
    for metric in METRICS:
        value = m.c[metric]
        magnitude = sa.func.abs(value)
        square = sa.case((magnitude < TINY, 0.0), (magnitude > 1 / TINY, sa.null()), else_=value * value)
        columns += [sa.func.count(value), sa.func.coalesce(sa.func.sum(value), 0.0),
                    sa.func.coalesce(sa.func.sum(square), 0.0), sa.func.count(square)]
        names += [f"{metric}_n", f"{metric}_sum", f"{metric}_sumsq", f"{metric}_nsq"]
    scan = (sa.select(*columns).select_from(m.join(t, m.c.trial_id == t.c.id))
            .where(t.c.state == "completed", t.c.source == "measured", m.c.short.is_(sa.false()))
            .group_by(m.c.testbed_id, m.c.workload_id, m.c.configuration_id))
    stats = sa.table("config_stats", *(sa.column(name) for name in names))
    op.execute(stats.insert().from_select(names, scan))


def _backfill_trials() -> None:
    dialect = op.get_bind().dialect.name
    sets = []
    for metric in METRICS:
        if dialect == "postgresql":
            path = f"'{{metrics,{metric}}}'"
            sets.append(f"{metric} = CASE WHEN json_typeof(summary #> {path}) = 'number' "
                        f"THEN (summary #>> {path})::double precision END")
        else:
            path = f"'$.metrics.{metric}'"
            sets.append(f"{metric} = CASE WHEN json_type(summary, {path}) IN ('real', 'integer') "
                        f"THEN json_extract(summary, {path}) END")
    op.execute(f"UPDATE trials SET {', '.join(sets)} WHERE summary IS NOT NULL")


def upgrade() -> None:
    op.create_table(
        "config_stats",
        sa.Column("testbed_id", sa.Integer(), nullable=False),
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("configuration_id", sa.Integer(), nullable=False),
        sa.Column("measurements", sa.Integer(), nullable=False),
        sa.Column("trials", sa.Integer(), nullable=False),
        sa.Column("last_measured_at", sa.DateTime(timezone=True), nullable=True),
        *_stat_columns(),
        sa.ForeignKeyConstraint(["testbed_id"], ["testbeds.id"], name="fk_config_stats_testbed_id_testbeds"),
        sa.ForeignKeyConstraint(["workload_id"], ["workloads.id"], name="fk_config_stats_workload_id_workloads"),
        sa.ForeignKeyConstraint(["configuration_id"], ["configurations.id"],
                                name="fk_config_stats_configuration_id_configurations"),
        sa.PrimaryKeyConstraint("testbed_id", "workload_id", "configuration_id", name="pk_config_stats"),
    )
    _backfill_stats()
    for metric in METRICS:
        op.add_column("trials", sa.Column(metric, sa.Float(), nullable=True))
    _backfill_trials()
    for metric in METRICS:
        op.create_index(f"ix_trials_job_id_{metric}", "trials", ["job_id", metric, "number"])
    op.create_index("ix_trials_configuration_id_state_source_job_id", "trials",
                    ["configuration_id", "state", "source", "job_id"])


def downgrade() -> None:
    op.drop_index("ix_trials_configuration_id_state_source_job_id", table_name="trials")
    for metric in METRICS:
        op.drop_index(f"ix_trials_job_id_{metric}", table_name="trials")
    for metric in reversed(METRICS):
        op.drop_column("trials", metric)
    op.drop_table("config_stats")
