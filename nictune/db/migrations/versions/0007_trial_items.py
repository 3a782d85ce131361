"""Each finished trial's page-ready JSON, for long jobs' trial pages.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29

Hand-written. A migration is a frozen snapshot: it never imports nictune.db models.

``trial_items``: per finished trial, its JSON as its job's trial page lists it (the API's
``TrialOut`` with no testbed or workload named), written by whatever records the trial
(``nictune.db.trial_item``); none while it runs, or for a row written without it (its page
item is then built from the row). A table of its own keeps the trials' rows small. Backfilled
here from the stored rows, in batches, with a copy of the rendering as it stands at this
revision.

``ix_trials_job_id_<metric>_desc`` for the five main metrics: (job_id, metric descending with
NULLs last, number, id), so that a page of a job's trials best first, however deep, is a range of
an index read in order (no sort of the job's trials per page).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import orjson
import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 2000
METRICS = ("throughput_gbps", "loss_pct", "interrupts_per_gb", "cpu_rx_pct", "packet_rate_mpps")


def _finite(value: Any) -> float | None:
    if type(value) is float:
        return value if math.isfinite(value) else None
    if type(value) is int:
        return float(value)
    return None


def _item(row: Any) -> str:
    raw = row.summary
    if isinstance(raw, str):
        raw = json.loads(raw) if raw else None
    summary: dict[str, Any] = raw if isinstance(raw, dict) else {}
    score = summary.get("score")
    repeats, cached_from = summary.get("repeats"), summary.get("cached_from")
    canonical = row.canonical
    item = {
        "job_id": row.job_id, "number": row.number, "state": row.state, "source": row.source,
        "config_hash": row.hash,
        "config": orjson.Fragment(canonical) if canonical.startswith("{") else {"value": json.loads(canonical)},
        "metrics": summary.get("metrics") or {}, "spread": summary.get("spread") or {},
        "score": None if not isinstance(score, dict) else {
            "feasible": bool(score.get("feasible")), "value": _finite(score.get("value")),
            "violation": _finite(score.get("violation"))},
        "repeats": repeats if type(repeats) is int else None,
        "cached_from": cached_from if type(cached_from) is int else None,
        "seconds": _finite(summary.get("seconds")), "error": row.error, "started_at": row.started_at,
        "finished_at": row.finished_at, "testbed": None, "workload": None, "simulated": row.kind == "sim",
    }
    return orjson.dumps(item, option=orjson.OPT_UTC_Z | orjson.OPT_NAIVE_UTC).decode()


def upgrade() -> None:
    """Create ``trial_items`` and fill it for every finished trial."""
    op.create_table(
        "trial_items",
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("item", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["trial_id"], ["trials.id"], name="fk_trial_items_trial_id_trials",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("trial_id", name="pk_trial_items"),
    )
    items = sa.table("trial_items", sa.column("trial_id", sa.Integer()), sa.column("item", sa.Text()))
    trials = sa.table("trials", sa.column("id", sa.Integer()), sa.column("job_id", sa.Integer()),
                      sa.column("number", sa.Integer()), sa.column("configuration_id", sa.Integer()),
                      sa.column("state", sa.String()), sa.column("source", sa.String()),
                      sa.column("error", sa.Text()), sa.column("started_at", sa.DateTime(timezone=True)),
                      sa.column("finished_at", sa.DateTime(timezone=True)), sa.column("summary", sa.Text()))
    configurations = sa.table("configurations", sa.column("id", sa.Integer()), sa.column("hash", sa.String()),
                              sa.column("canonical", sa.Text()))
    jobs = sa.table("jobs", sa.column("id", sa.Integer()), sa.column("testbed_id", sa.Integer()))
    testbeds = sa.table("testbeds", sa.column("id", sa.Integer()), sa.column("kind", sa.String()))
    bind = op.get_bind()
    after = 0
    while True:
        rows = bind.execute(
            sa.select(trials.c.id, trials.c.job_id, trials.c.number, trials.c.state, trials.c.source,
                      trials.c.error, trials.c.started_at, trials.c.finished_at,
                      sa.cast(trials.c.summary, sa.Text()).label("summary"), configurations.c.hash,
                      configurations.c.canonical, testbeds.c.kind)
            .join(configurations, trials.c.configuration_id == configurations.c.id)
            .join(jobs, trials.c.job_id == jobs.c.id).join(testbeds, jobs.c.testbed_id == testbeds.c.id)
            .where(trials.c.id > after, trials.c.state != "running", trials.c.finished_at.is_not(None))
            .order_by(trials.c.id).limit(BATCH)).all()
        if not rows:
            break
        bind.execute(items.insert(), [{"trial_id": row.id, "item": _item(row)} for row in rows])
        after = rows[-1].id
    # A job's trials best first (descending, missing figures last) read an index in order.
    postgres = bind.dialect.name == "postgresql"
    for metric in METRICS:
        order = "DESC NULLS LAST" if postgres else "DESC"  # SQLite's DESC puts NULLs last
        # id last: PostgreSQL reads the page's ids from the index alone (SQLite's index rows
        # hold the rowid anyway).
        op.create_index(f"ix_trials_job_id_{metric}_desc", "trials",
                        ["job_id", sa.text(f"{metric} {order}"), "number", "id"])


def downgrade() -> None:
    """Drop ``trial_items`` and the descending indexes."""
    for metric in METRICS:
        op.drop_index(f"ix_trials_job_id_{metric}_desc", table_name="trials")
    op.drop_table("trial_items")
