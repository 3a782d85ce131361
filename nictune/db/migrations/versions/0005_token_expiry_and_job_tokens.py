"""Token expiry, and the token that submitted or cancelled each job.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27

Hand-written. A migration is a frozen snapshot: it never imports nictune.db models.
Tokens created before it never expire (``expires_at`` NULL), as before; jobs stored before
it have no submitter recorded (NULL: the CLI's own jobs have none either).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add ``api_tokens.expires_at``, ``jobs.submitted_by`` and ``jobs.cancelled_by``."""
    op.add_column("api_tokens", sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("jobs", sa.Column("submitted_by", sa.String(64), nullable=True))
    op.add_column("jobs", sa.Column("cancelled_by", sa.String(64), nullable=True))


def downgrade() -> None:
    """Drop the three columns (expiring tokens then never expire)."""
    op.drop_column("jobs", "cancelled_by")
    op.drop_column("jobs", "submitted_by")
    op.drop_column("api_tokens", "expires_at")
