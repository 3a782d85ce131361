"""The duration of each benchmark run: a short screening run and a full run are different fidelities.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-27

Hand-written. A migration is a frozen snapshot: it never imports nictune.db models.
Measurements stored before it have no duration (NULL): they are full runs of their
workload, which is what every run was until short runs existed. ``short`` marks a
screening run (``optimize --short-run``): it decides whether a configuration earns a full
run and is never a fitness (the cache, the best configurations and warm starts skip it).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("measurements", sa.Column("duration_s", sa.Float(), nullable=True))
    op.add_column("measurements", sa.Column("short", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    # Short runs are screening runs, never a fitness: without the column to tell them
    # apart they would count as full measurements, so they go.
    op.execute("DELETE FROM measurements WHERE short")
    op.drop_column("measurements", "short")
    op.drop_column("measurements", "duration_s")
