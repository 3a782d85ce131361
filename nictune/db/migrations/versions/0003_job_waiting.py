"""Job state ``waiting``: a job whose pool has no live worker (Celery executor).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22

Hand-written. A migration is a frozen snapshot: it never imports nictune.db models.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD = "state IN ('pending', 'running', 'interrupted', 'completed', 'failed', 'cancelled')"
_NEW = "state IN ('pending', 'running', 'waiting', 'interrupted', 'completed', 'failed', 'cancelled')"


def _replace_check(old: str, new: str) -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        op.drop_constraint("ck_jobs_state", "jobs", type_="check")
        op.create_check_constraint("ck_jobs_state", "jobs", new)
        return
    # SQLite cannot alter a constraint, and copying the table (Alembic's batch mode) would
    # DROP the old ``jobs`` -- which, with foreign keys on inside the migration's transaction,
    # deletes every trial through ON DELETE CASCADE. Instead the stored CREATE TABLE text is
    # edited, SQLite's documented way to change a CHECK constraint that does not alter the
    # on-disk format (sqlite.org/lang_altertable.html, "other kinds of table schema changes").
    sql = bind.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'jobs'").scalar_one()
    if old not in sql:
        raise RuntimeError(f"jobs table does not hold the expected constraint {old!r}: {sql}")
    version = int(bind.exec_driver_sql("PRAGMA schema_version").scalar_one())
    bind.exec_driver_sql("PRAGMA writable_schema = ON")
    bind.exec_driver_sql("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = 'jobs'",
                         (sql.replace(old, new),))
    bind.exec_driver_sql(f"PRAGMA schema_version = {version + 1}")
    bind.exec_driver_sql("PRAGMA writable_schema = OFF")


def upgrade() -> None:
    """Allow ``waiting`` in ``jobs.state``."""
    _replace_check(_OLD, _NEW)


def downgrade() -> None:
    """Back to the six states (a waiting job becomes ``interrupted``: it resumes at the next start)."""
    op.execute("UPDATE jobs SET state = 'interrupted' WHERE state = 'waiting'")
    _replace_check(_NEW, _OLD)
