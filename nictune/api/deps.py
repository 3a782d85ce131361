"""FastAPI dependencies: the objects ``create_app`` keeps in ``app.state``."""

from __future__ import annotations

from fastapi import Request
from sqlalchemy.engine import Engine as DbEngine

from nictune.api.manager import JobManager
from nictune.api.notifier import Notifier
from nictune.api.settings import ApiSettings


async def get_settings(request: Request) -> ApiSettings:
    """The settings the app was created with."""
    settings: ApiSettings = request.app.state.settings
    return settings


async def get_db(request: Request) -> DbEngine:
    """The read engine (see :mod:`nictune.api.database`); writes go through the job manager."""
    engine: DbEngine = request.app.state.db
    return engine


async def get_manager(request: Request) -> JobManager:
    """The job runner of this process."""
    manager: JobManager = request.app.state.manager
    return manager


async def get_notifier(request: Request) -> Notifier:
    """The wake-ups of event streams."""
    notifier: Notifier = request.app.state.notifier
    return notifier
