"""Serving the dashboard: ``GET /`` (the page) and ``GET /static/<file>`` (its scripts and styles).

The assets are Starlette's :class:`~starlette.staticfiles.StaticFiles` over the package data
under ``nictune/api/dashboard/static`` (it keeps requests inside that folder and answers
``If-None-Match`` with ``304``), with the dashboard's headers and media types; ``index.html``
is served only at ``/``, filled in. The page itself needs no token (it holds no data): every
figure it shows comes from the ``/v1`` endpoints, called with the user's bearer token.

The page carries a small JSON block the server fills in (version, objectives, workloads,
metrics), so the browser does not have to hard-code them.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Annotated, Any

from fastapi import APIRouter, Header, Response
from starlette.exceptions import HTTPException
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from nictune import __version__
from nictune.api.errors import ApiError
from nictune.api.views import SIM_NOTE
from nictune.measure.benchmarks.workloads import DESCRIPTIONS, WORKLOADS
from nictune.metrics import DEFINITIONS
from nictune.optimizer import OBJECTIVES

#: The package whose ``static`` folder holds the dashboard's files.
_PACKAGE = __package__ or "nictune.api.dashboard"


#: The placeholder in ``index.html`` that :func:`dashboard_router` replaces with :func:`page_meta`.
META_PLACEHOLDER = "__NICTUNE_META__"

#: What the browser may load and where it may connect: this origin only, no inline script.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

_MEDIA_TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css",
                ".html": "text/html", ".svg": "image/svg+xml", ".json": "application/json"}

#: Headers of every dashboard response.
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@dataclass(frozen=True)
class Asset:
    """One file of the dashboard (the page, filled in, is served from one).

    Attributes:
        body: the bytes sent.
        media_type: its ``Content-Type`` (text types get ``charset=utf-8``).
        etag: a strong validator derived from the body.
    """

    body: bytes
    media_type: str

    @property
    def etag(self) -> str:
        """``"<sha256 prefix>"`` of the body."""
        return '"' + hashlib.sha256(self.body).hexdigest()[:32] + '"'

    def response(self, if_none_match: str | None) -> Response:
        """The file, or ``304 Not Modified`` when the client's copy is current."""
        headers = {**SECURITY_HEADERS, "ETag": self.etag}
        if if_none_match is not None and self.etag in {t.strip() for t in if_none_match.split(",")}:
            return Response(status_code=304, headers=headers)
        return Response(self.body, media_type=self.media_type, headers=headers)


def _media_type(name: str) -> str:
    suffix = name[name.rfind("."):] if "." in name else ""
    kind = _MEDIA_TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"
    if kind.startswith("text/") or kind in ("application/json", "image/svg+xml"):
        kind += "; charset=utf-8"
    return kind


def _walk(folder: Traversable, prefix: str = "") -> dict[str, Asset]:
    found: dict[str, Asset] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.startswith((".", "_")):
            continue
        name = f"{prefix}{entry.name}"
        if entry.is_dir():
            found.update(_walk(entry, f"{name}/"))
        elif entry.is_file():
            found[name] = Asset(entry.read_bytes(), _media_type(name))
    return found


def load_assets() -> dict[str, Asset]:
    """Every file of the dashboard's ``static`` folder, by path relative to it (``js/app.js``)."""
    return _walk(resources.files(_PACKAGE).joinpath("static"))


def metric_definitions() -> dict[str, dict[str, Any]]:
    """nictune's one table of metric definitions (:data:`nictune.metrics.DEFINITIONS`), in its
    order: name -> label, unit, heading (``throughput (Gbit/s)``), description, better, per_run.
    The page takes every metric's label and unit from here."""
    return {name: {"label": d.label, "unit": d.unit, "heading": d.heading, "description": d.description,
                   "better": d.better, "per_run": d.per_run} for name, d in DEFINITIONS.items()}


def page_meta() -> dict[str, Any]:
    """What the page needs to know about this server: version, objectives, workloads, metrics."""
    return {
        "version": __version__,
        "objectives": [o.describe() for o in OBJECTIVES.values()],
        "workloads": [{"name": name, "description": DESCRIPTIONS.get(name, "")} for name in WORKLOADS],
        "metrics": metric_definitions(),
        "sim_note": SIM_NOTE,
    }


def render_index(template: bytes, meta: Mapping[str, Any]) -> bytes:
    """``index.html`` with its JSON block filled in (``<``, ``>`` and ``&`` escaped, so no value
    can close the ``<script type="application/json">`` element it sits in)."""
    text = json.dumps(meta, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return template.decode("utf-8").replace(META_PLACEHOLDER, text, 1).encode("utf-8")


class DashboardFiles(StaticFiles):
    """The dashboard's ``static`` folder, served by Starlette with the dashboard's headers
    (:data:`SECURITY_HEADERS`, on ``304`` answers too) and media types. ``index.html`` (served
    filled in at ``/``) and names starting with ``.`` or ``_`` are not served; a missing file
    is a ``404`` with the API's error body."""

    def __init__(self) -> None:
        super().__init__(packages=[(_PACKAGE, "static")])

    async def get_response(self, path: str, scope: Scope) -> Response:
        name = path.replace(os.sep, "/")
        try:
            if name == "index.html" or any(part.startswith((".", "_")) for part in name.split("/")):
                raise HTTPException(404)
            return await super().get_response(path, scope)
        except HTTPException as exc:
            if exc.status_code != 404:
                raise
            raise ApiError(404, f"the dashboard has no file {name!r}", field="name") from None

    def file_response(self, full_path: str | os.PathLike[str], stat_result: os.stat_result, scope: Scope,
                      status_code: int = 200) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers.update(SECURITY_HEADERS)
        if response.status_code != 304:
            response.headers["content-type"] = _media_type(os.fspath(full_path))
        return response


def dashboard_router(index_html: bytes | None = None) -> APIRouter:
    """Build the router that serves the dashboard at ``/`` and its files at ``/static/...``.

    Args:
        index_html: the page before :func:`render_index` fills it in (default: the package's
            ``static/index.html``, read now).

    Returns:
        An :class:`~fastapi.APIRouter` to pass to ``app.include_router``; its routes are
        left out of the OpenAPI document.

    Raises:
        RuntimeError: the ``static`` folder has no ``index.html`` (a broken install).
    """
    if index_html is None:
        page = resources.files(_PACKAGE).joinpath("static", "index.html")
        if not page.is_file():
            raise RuntimeError("the dashboard's static/index.html is missing: reinstall nictune")
        index_html = page.read_bytes()
    index = Asset(render_index(index_html, page_meta()), "text/html; charset=utf-8")
    router = APIRouter(include_in_schema=False)

    @router.get("/")
    def dashboard_page(if_none_match: Annotated[str | None, Header()] = None) -> Response:
        """The dashboard (a single page; it routes with the URL fragment: #/jobs, #/history)."""
        return index.response(if_none_match)

    router.mount("/static", DashboardFiles(), name="dashboard-static")
    return router


__all__ = ["CONTENT_SECURITY_POLICY", "Asset", "DashboardFiles", "dashboard_router", "load_assets",
           "metric_definitions", "page_meta", "render_index"]
