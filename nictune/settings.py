"""What nictune reads from the environment: one pydantic-settings class per process kind.

Every environment variable nictune reads is a field of one of these classes; no other
module reads ``os.environ``. :class:`CommonSettings` holds what every process reads (where the
history, the machine locks and the apply journals are); each process kind reads a class
that builds on it:

* the CLI: :class:`CliSettings` (here: :mod:`nictune.api.client` reads it too);
* the service (``nictune serve``): :class:`nictune.api.settings.ApiSettings`
  (``NICTUNE_API_<FIELD>``);
* a measurement worker (``nictune worker``), and the service's Celery executor:
  :class:`nictune.executors.celery_app.CelerySettings` (``NICTUNE_BROKER_URL`` ...).

A class reads the environment when it is built, so build one when the value is needed
(``CommonSettings().state_dir``): a value set after the process started (a test's
``monkeypatch.setenv``) is seen, and nothing is cached. An argument given to the class wins
over the environment, which wins over the default; an empty variable counts as unset.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class CommonSettings(BaseSettings):
    """What every nictune process reads, under the same names whatever its class's prefix.

    Attributes:
        db: ``NICTUNE_DB``: the history's SQLAlchemy URL, or a SQLite file's path;
            ``None``: ``nictune.db`` in the per-user data directory.
        lock_dir: ``NICTUNE_LOCK_DIR``: where machine locks live; ``None``: ``/run/lock``
            when writable, else the temp directory.
        state_dir: ``NICTUNE_STATE_DIR``: the base of the apply journals (``journal/``) and
            of kept configurations (``applied/``); ``None``: the per-user state directory.
    """

    # Each common field names its variable (validation_alias), so a subclass's prefix
    # (NICTUNE_API_) does not apply to it; populate_by_name lets code pass it by field name.
    model_config = SettingsConfigDict(env_prefix="NICTUNE_", extra="ignore", env_ignore_empty=True,
                                      populate_by_name=True)

    db: str | None = Field(default=None, validation_alias="NICTUNE_DB")
    lock_dir: Path | None = Field(default=None, validation_alias="NICTUNE_LOCK_DIR")
    state_dir: Path | None = Field(default=None, validation_alias="NICTUNE_STATE_DIR")


class CliSettings(CommonSettings):
    """What the CLI reads besides the common part (a command-line option wins over it).

    Attributes:
        server: ``NICTUNE_SERVER``: the service ``--server`` defaults to; ``None``: the
            local database.
        token: ``NICTUNE_TOKEN``: the bearer token ``--token`` defaults to.
    """

    server: str | None = None
    token: str | None = None
