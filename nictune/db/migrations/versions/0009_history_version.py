"""The history's version: one row counted up by every transaction that changes the measurements.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-29

Hand-written. A migration is a frozen snapshot: it never imports nictune.db models.

``history_version``: a single row (``id`` 1) whose ``version`` the transactions that add
measurements or rebuild ``config_stats`` (deletions) count up (``nictune.db.stats``). The
service keyed its cached answers of the history on the newest measurement id, which a
deletion can move back and concurrent writers on PostgreSQL can commit out of order, so those
answers also expired after 10 s; keyed on this version they are kept for as long as it holds.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create ``history_version`` with its one row at 0."""
    table = op.create_table(
        "history_version",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("id = 1", name="ck_history_version_one_row"),
        sa.PrimaryKeyConstraint("id", name="pk_history_version"),
    )
    op.bulk_insert(table, [{"id": 1, "version": 0}])


def downgrade() -> None:
    """Drop ``history_version``."""
    op.drop_table("history_version")
