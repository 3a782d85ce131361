"""The application factory: ``create_app(settings)`` builds a FastAPI app; nothing runs at import.

At start the app opens the database (running the Alembic migrations), starts its job
runner and resumes the jobs it left unfinished; at stop it lets the trials in flight
finish their restore, so the jobs resume at the next start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.to_thread
from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.middleware.body_limit import RequestBodyLimitMiddleware

from nictune import __version__
from nictune.api import routers
from nictune.api.auth import TokenCache
from nictune.api.cache import VersionedCache
from nictune.api.dashboard import dashboard_router, export_router
from nictune.api.database import DatabaseProbe, read_engine
from nictune.api.errors import install_error_handlers
from nictune.api.limits import DeclaredBodyLimit, RequestLimit, StreamSlots, on_body_too_large
from nictune.api.manager import JobManager, TrialHook
from nictune.api.metrics import make_registry
from nictune.api.notifier import Notifier
from nictune.api.settings import ApiSettings
from nictune.db import open_database
from nictune.optimizer.racing import t_quantile

log = logging.getLogger("nictune.api")

DESCRIPTION = """\
Submit, follow and query nictune optimization jobs.

Every endpoint but `/healthz` needs `Authorization: Bearer <token>`; tokens come from
`nictune token create --role read|submit --name NAME`. Mutating endpoints need role
`submit`. Errors share one body (`error`, `message`, `field`, `allowed`, `problems`).

Figures from `sim:*` testbeds come from a model, not from hardware: such responses carry
`"simulated": true`.
"""


#: Where Swagger UI's own files (from the swagger-ui-bundle package) are served.
DOCS_ASSETS = "/docs-assets"


def install_docs(app: FastAPI) -> None:
    """``/docs``: Swagger UI from the installed package, never from a CDN (an operator pastes a
    token into that page). ReDoc is not served: no package ships it."""
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.responses import HTMLResponse
    from starlette.staticfiles import StaticFiles
    from swagger_ui_bundle import swagger_ui_path

    app.mount(DOCS_ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title="nictune API",
                                   swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
                                   swagger_favicon_url="/static/favicon.svg")


def create_app(settings: ApiSettings | None = None, *, trial_hook: TrialHook | None = None) -> FastAPI:
    """Build the REST service.

    Args:
        settings: how to run; read from the environment when ``None``.
        trial_hook: called after every new trial of the service's jobs
            (:data:`~nictune.api.manager.TrialHook`; tests pace simulated jobs with it).

    Returns:
        The FastAPI application. Its database is opened (and migrated) when it starts.
    """
    settings = settings or ApiSettings()
    notifier = Notifier()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        notifier.bind(asyncio.get_running_loop())
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.threads()
        # Event streams read on threads of their own, at most half as many: a crowd of
        # streams never holds every request thread.
        app.state.stream_threads = anyio.CapacityLimiter(max(1, settings.threads() // 2))
        dbe = await run_in_threadpool(open_database, settings.database_url())
        # SciPy's Student t (the rankings' intervals) loads in ~0.4 s: at the start, not in a request.
        await run_in_threadpool(t_quantile, 0.9, 2.0)
        reader = read_engine(settings.database_url())
        manager = JobManager(dbe, settings, notifier, trial_hook=trial_hook)
        app.state.db = reader  # every endpoint reads; writes go through the manager
        app.state.db_probe = probe = DatabaseProbe(reader)
        app.state.manager = manager
        app.state.registry = make_registry(reader, manager)
        if settings.resume_jobs:
            await run_in_threadpool(manager.resume_unfinished)
        try:
            yield
        finally:
            await run_in_threadpool(manager.shutdown)
            probe.close()
            reader.dispose()
            dbe.dispose()

    app = FastAPI(title="nictune", version=__version__, description=DESCRIPTION, lifespan=lifespan,
                  docs_url=None, redoc_url=None,  # served below from the package: no CDN
                  openapi_tags=[{"name": "jobs", "description": "Submit and follow optimization jobs."},
                                {"name": "history", "description": "Everything ever measured."},
                                {"name": "catalog", "description": "Search spaces and testbeds."},
                                {"name": "service", "description": "Health and metrics."}])
    app.state.settings = settings
    app.state.notifier = notifier
    app.state.cache = VersionedCache()
    app.state.tokens = TokenCache(settings.token_cache_s)
    app.state.streams = StreamSlots(settings.max_streams_per_token, settings.max_streams)
    install_error_handlers(app)
    app.add_exception_handler(413, on_body_too_large)  # a chunked body over max_body_bytes
    for module in (routers.jobs, routers.events, routers.history, routers.configurations, routers.spaces,
                   routers.testbeds, routers.health, routers.metrics, routers.workers):
        app.include_router(module.router)
    app.include_router(export_router())
    app.include_router(dashboard_router())
    install_docs(app)
    app.add_middleware(RequestLimit, per_token=settings.max_requests_per_token, total=settings.max_requests)
    # Outermost first: a body declared too large is answered at once; Starlette counts the others.
    app.add_middleware(RequestBodyLimitMiddleware, max_body_size=settings.max_body_bytes)
    app.add_middleware(DeclaredBodyLimit, max_bytes=settings.max_body_bytes)
    return app
