"""The web dashboard of ``nictune serve``: a page at ``/`` with its assets under ``/static/``.

Hand-written HTML, CSS and JavaScript (ES modules) shipped as package data: no build step,
nothing loaded from the internet. The page calls the same ``/v1`` endpoints as any client,
with the bearer token the user types in (kept in ``sessionStorage``).

Typical use (in ``create_app``)::

    from nictune.api.dashboard import dashboard_router, export_router
    app.include_router(export_router())      # GET /v1/jobs/{id}/export, /v1/jobs/{id}/default
    app.include_router(dashboard_router())   # GET /, GET /static/...
"""

from nictune.api.dashboard.export_route import export_router
from nictune.api.dashboard.router import dashboard_router

__all__ = ["dashboard_router", "export_router"]
