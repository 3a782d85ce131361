"""Initial schema: testbeds, configurations, workloads, jobs, trials, measurements.

Revision ID: 0001
Revises:
Create Date: 2024-11-22

Hand-written. A migration is a frozen snapshot: it never imports nictune.db.models, so
later changes to the models cannot change what this revision creates.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _timestamp(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    """Create the six tables of nictune's history."""
    op.create_table(
        "testbeds",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("fingerprint", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("fingerprint_hash", sa.String(64), nullable=False),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_testbeds"),
        sa.UniqueConstraint("fingerprint_hash", name="uq_testbeds_fingerprint_hash"),
        sa.CheckConstraint("kind IN ('sim', 'veth', 'ssh')", name="ck_testbeds_kind"),
    )
    op.create_table(
        "configurations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(128), nullable=False),
        sa.Column("canonical", sa.Text(), nullable=False),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_configurations"),
        sa.UniqueConstraint("hash", name="uq_configurations_hash"),
    )
    op.create_table(
        "workloads",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("definition", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_workloads"),
        sa.UniqueConstraint("key_hash", name="uq_workloads_key_hash"),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("space_name", sa.String(200), nullable=False),
        sa.Column("space_definition", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("testbed_id", sa.Integer(), nullable=False),
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("objectives", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("constraints", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("engine", sa.String(64), nullable=False),
        sa.Column("engine_params", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("budget", sa.Integer(), nullable=False),
        sa.Column("repeats", sa.Integer(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        _timestamp("created_at"),
        _timestamp("started_at", nullable=True),
        _timestamp("finished_at", nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("stats", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("best_trial_id", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_jobs"),
        sa.ForeignKeyConstraint(
            ["testbed_id"], ["testbeds.id"], name="fk_jobs_testbed_id_testbeds"
        ),
        sa.ForeignKeyConstraint(
            ["workload_id"], ["workloads.id"], name="fk_jobs_workload_id_workloads"
        ),
        sa.CheckConstraint(
            "state IN ('pending', 'running', 'interrupted', 'completed', 'failed', "
            "'cancelled')",
            name="ck_jobs_state",
        ),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_jobs_testbed_id", "jobs", ["testbed_id"])
    op.create_index("ix_jobs_workload_id", "jobs", ["workload_id"])
    op.create_table(
        "trials",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("configuration_id", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        _timestamp("started_at"),
        _timestamp("finished_at", nullable=True),
        sa.Column("summary", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("snapshot", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("notes", sa.JSON(none_as_null=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_trials"),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name="fk_trials_job_id_jobs", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["configuration_id"],
            ["configurations.id"],
            name="fk_trials_configuration_id_configurations",
        ),
        sa.UniqueConstraint("job_id", "number", name="uq_trials_job_id_number"),
        sa.CheckConstraint(
            "state IN ('running', 'completed', 'failed')", name="ck_trials_state"
        ),
        sa.CheckConstraint("source IN ('measured', 'cache')", name="ck_trials_source"),
    )
    op.create_index("ix_trials_job_id", "trials", ["job_id"])
    op.create_index("ix_trials_configuration_id", "trials", ["configuration_id"])
    op.create_table(
        "measurements",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("repeat", sa.Integer(), nullable=False),
        sa.Column("testbed_id", sa.Integer(), nullable=False),
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("configuration_id", sa.Integer(), nullable=False),
        sa.Column("metrics", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("throughput_gbps", sa.Float(), nullable=True),
        sa.Column("loss_pct", sa.Float(), nullable=True),
        sa.Column("interrupts_per_gb", sa.Float(), nullable=True),
        sa.Column("cpu_rx_pct", sa.Float(), nullable=True),
        sa.Column("packet_rate_mpps", sa.Float(), nullable=True),
        sa.Column("counters", sa.JSON(none_as_null=True), nullable=False),
        _timestamp("started_at"),
        _timestamp("finished_at"),
        sa.PrimaryKeyConstraint("id", name="pk_measurements"),
        sa.ForeignKeyConstraint(
            ["trial_id"], ["trials.id"], name="fk_measurements_trial_id_trials",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["testbed_id"], ["testbeds.id"], name="fk_measurements_testbed_id_testbeds"
        ),
        sa.ForeignKeyConstraint(
            ["workload_id"], ["workloads.id"], name="fk_measurements_workload_id_workloads"
        ),
        sa.ForeignKeyConstraint(
            ["configuration_id"],
            ["configurations.id"],
            name="fk_measurements_configuration_id_configurations",
        ),
    )
    op.create_index("ix_measurements_trial_id", "measurements", ["trial_id"])
    op.create_index(
        "ix_measurements_cache_key",
        "measurements",
        ["testbed_id", "workload_id", "configuration_id"],
    )


def downgrade() -> None:
    """Drop everything :func:`upgrade` created, children first."""
    op.drop_table("measurements")
    op.drop_table("trials")
    op.drop_table("jobs")
    op.drop_table("workloads")
    op.drop_table("configurations")
    op.drop_table("testbeds")
