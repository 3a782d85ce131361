"""Page parameters and the link to the next page."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import Query, Request, Response
from pydantic import BaseModel

#: The largest page a list endpoint serves (clients read longer lists page by page).
PAGE_MAX = 1000
Limit = Annotated[int, Query(ge=1, le=PAGE_MAX, description="Items per page.")]
Offset = Annotated[int, Query(ge=0, le=1_000_000_000, description="Items to skip.")]


def next_page(request: Request, total: int, limit: int, offset: int) -> str | None:
    """Path and query of the page after this one, or ``None`` on the last page: the request's
    other parameters as they came, then ``offset`` and ``limit`` (what
    ``request.url.include_query_params(offset=..., limit=...)`` gives, without building the
    whole URL and parsing its query again: a third of the cost)."""
    if offset + limit >= total:
        return None
    kept = [(k, v) for k, v in request.query_params.multi_items() if k not in ("offset", "limit")]
    query = urlencode([*kept, ("offset", offset + limit), ("limit", limit)])
    path = request.scope["path"].replace("?", "%3F").replace("#", "%23").replace("\\", "%5C")
    return f"{path}?{query}"


def json_response(model: BaseModel) -> Response:
    """``model`` as a JSON response, serialised once.

    For large pages: a model returned as such is dumped, validated against the route's
    ``response_model`` and serialised again; this one was validated when it was built.
    """
    return Response(model.model_dump_json(), media_type="application/json")
