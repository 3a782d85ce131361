"""Alembic environment for nictune's migrations.

Normally run through :mod:`nictune.db.migrate`, which hands over an open connection in
``config.attributes["connection"]`` (inside its locked transaction). Run from the
``alembic`` command line (``alembic -c nictune/db/alembic.ini ...``) it connects to
``sqlalchemy.url`` or, when that is unset, to nictune's default database.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from nictune.db.models import Base
from nictune.db.session import default_url, make_engine

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    return config.get_main_option("sqlalchemy.url") or default_url()


def _configure_and_run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things; batch mode rebuilds tables in later migrations.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    """Emit the SQL of the migrations without connecting (``alembic upgrade --sql``)."""
    url = _url()
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        render_as_batch=url.startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run the migrations on the handed-over connection or on a new one."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure_and_run(connection)
        return
    engine = make_engine(_url())
    try:
        with engine.begin() as new_connection:
            _configure_and_run(new_connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
