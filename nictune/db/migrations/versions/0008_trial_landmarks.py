"""Landmarks of finished jobs' trials, so that deep pages start near themselves; page items
kept inline on PostgreSQL.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-29

Hand-written. A migration is a frozen snapshot: it never imports nictune.db models.

``trial_landmarks``: per finished job and per order its pages read from an index (by number
either way; a main metric descending, missing figures last), the (value, number) of every
256th trial of that order and of its first trial without the figure, with the job's trial
count. Written by the transaction that finishes a job (``nictune.db.landmarks``); backfilled
here for the jobs already finished, with a copy of the computation as it stands at this
revision.

PostgreSQL: ``trial_items`` gets ``toast_tuple_target = 8160``, and its rows are written again.
An item is ~2.4 kB, above the default target (~2 kB): PostgreSQL had compressed each and moved
it to the TOAST table, so a page of 50 paid 50 TOAST lookups and decompressions (0.65-0.78 ms
of backend CPU for the 50 items, against 0.42-0.47 ms stored inline, on a 1M-trial database).
Items up to ~8 kB now stay in the row as they are. SQLite keeps them in the row anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

EVERY = 256
METRICS = ("throughput_gbps", "loss_pct", "interrupts_per_gb", "cpu_rx_pct", "packet_rate_mpps")


def _landmarks(bind: sa.Connection, job_id: int, sort: str) -> list[dict[str, Any]]:
    name = sort.lstrip("-")
    if name == "number":
        key, order = "NULL", f"number {'DESC' if sort.startswith('-') else 'ASC'}"
    else:
        key, order = name, f"{name} DESC NULLS LAST, number ASC"
    rows = bind.execute(sa.text(
        f"SELECT position, value, number FROM (SELECT {key} AS value, number, "
        f"row_number() OVER (ORDER BY {order}) - 1 AS position FROM trials WHERE job_id = :job) AS ranked "
        "WHERE position % :every = 0 ORDER BY position"), {"job": job_id, "every": EVERY}).all()
    marks = [(int(r.position), None if r.value is None else float(r.value), int(r.number)) for r in rows]
    total = int(bind.execute(sa.text("SELECT count(*) FROM trials WHERE job_id = :job"), {"job": job_id}).scalar_one())
    if name != "number":
        counted, first = bind.execute(sa.text(
            f"SELECT count({name}), min(CASE WHEN {name} IS NULL THEN number END) "
            "FROM trials WHERE job_id = :job"), {"job": job_id}).one()
        if first is not None and counted % EVERY:
            marks = sorted([*marks, (int(counted), None, int(first))])
    return [{"job_id": job_id, "sort": sort, "position": p, "value": v, "number": n, "total": total}
            for p, v, n in marks]


def upgrade() -> None:
    """Create ``trial_landmarks`` and fill it for every finished job."""
    op.create_table(
        "trial_landmarks",
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("sort", sa.String(length=32), nullable=False),
        sa.Column("position", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name="fk_trial_landmarks_job_id_jobs", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("job_id", "sort", "position", name="pk_trial_landmarks"),
    )
    landmarks = sa.table("trial_landmarks", sa.column("job_id", sa.Integer()), sa.column("sort", sa.String()),
                         sa.column("position", sa.Integer()), sa.column("value", sa.Float()),
                         sa.column("number", sa.Integer()), sa.column("total", sa.Integer()))
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("ALTER TABLE trial_items SET (toast_tuple_target = 8160)")
        # A value read from TOAST is written back as it was read (compressed); a new one is not.
        op.execute("UPDATE trial_items SET item = item || ''")
    jobs = bind.execute(sa.text("SELECT id FROM jobs WHERE state IN ('completed', 'failed', 'cancelled', "
                                "'interrupted') AND finished_at IS NOT NULL ORDER BY id")).scalars().all()
    for job_id in jobs:
        rows = [row for sort in ("number", "-number", *(f"-{m}" for m in METRICS))
                for row in _landmarks(bind, int(job_id), sort)]
        if rows:
            bind.execute(landmarks.insert(), rows)


def downgrade() -> None:
    """Drop ``trial_landmarks``; PostgreSQL's default TOAST target for new page items."""
    op.drop_table("trial_landmarks")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE trial_items RESET (toast_tuple_target)")
